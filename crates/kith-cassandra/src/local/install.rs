//! The Cassandra that local clusters run: Apache Cassandra's jars from Maven Central, fetched
//! once with Maven into kith's cache, and the machine's Java.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};

/// The Cassandra release local clusters run.
pub const CASSANDRA_VERSION: &str = "5.0.9";

/// The Maven project whose runtime dependencies are Cassandra's server and its libraries.
const POM: &str = include_str!("pom.xml");

/// Where the jars go unless `KITH_CASSANDRA_HOME` says otherwise:
/// `$XDG_CACHE_HOME/kith/cassandra-<version>` or `~/.cache/kith/cassandra-<version>`.
pub fn default_home() -> PathBuf {
    if let Some(home) = std::env::var_os("KITH_CASSANDRA_HOME") {
        return PathBuf::from(home);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME").map(PathBuf::from).unwrap_or_else(|| {
        std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| "/tmp".into()).join(".cache")
    });
    cache.join("kith").join(format!("cassandra-{CASSANDRA_VERSION}"))
}

/// The directory of Cassandra's jars under `home`, fetching them with Maven first if they are
/// not there yet (about 100 jars, 67 MB). A fetch that fails leaves nothing half-made behind.
pub fn ensure_jars(home: &Path) -> Result<PathBuf> {
    let lib = home.join("lib");
    let done = home.join("lib.complete");
    if done.exists() {
        return Ok(lib);
    }
    java_major()?;
    if !on_path("mvn") {
        return Err(Error::Missing {
            what: "Maven (mvn)",
            fix: "install Debian's maven package (scripts/system-deps.sh does)",
        });
    }
    std::fs::create_dir_all(home).map_err(Error::io(format!("creating {}", home.display())))?;
    let pom = home.join("pom.xml");
    std::fs::write(&pom, POM).map_err(Error::io(format!("writing {}", pom.display())))?;
    let partial = home.join("lib.partial");
    let _ = std::fs::remove_dir_all(&partial);
    eprintln!(
        "kith: fetching Apache Cassandra {CASSANDRA_VERSION} from Maven Central into {}",
        home.display()
    );
    let out = Command::new("mvn")
        .args(["-q", "-B", "-f"])
        .arg(&pom)
        .arg("dependency:copy-dependencies")
        .arg(format!("-DoutputDirectory={}", partial.display()))
        .arg("-DincludeScope=runtime")
        .output()
        .map_err(Error::io("running mvn"))?;
    if !out.status.success() {
        let _ = std::fs::remove_dir_all(&partial);
        return Err(Error::Cluster(format!(
            "mvn could not fetch Cassandra {CASSANDRA_VERSION}: {}",
            tail(&String::from_utf8_lossy(&out.stdout), 5)
        )));
    }
    let _ = std::fs::remove_dir_all(&lib);
    std::fs::rename(&partial, &lib)
        .map_err(Error::io(format!("moving jars to {}", lib.display())))?;
    std::fs::write(&done, CASSANDRA_VERSION)
        .map_err(Error::io(format!("writing {}", done.display())))?;
    Ok(lib)
}

/// The jar of jamm (the memory meter Cassandra loads as a Java agent) in `lib`.
pub(crate) fn jamm_jar(lib: &Path) -> Result<PathBuf> {
    let entries =
        std::fs::read_dir(lib).map_err(Error::io(format!("reading {}", lib.display())))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("jamm-") && name.ends_with(".jar") {
            return Ok(entry.path());
        }
    }
    Err(Error::Cluster(format!(
        "{}: no jamm jar; remove {} and run again to fetch Cassandra afresh",
        lib.display(),
        lib.parent().unwrap_or(lib).join("lib.complete").display()
    )))
}

/// The major version of `java` on the path; Cassandra 5 runs on Java 11 or 17.
pub(crate) fn java_major() -> Result<u32> {
    let missing = Error::Missing {
        what: "Java 11 or 17 (java)",
        fix: "install Debian's default-jre-headless package (scripts/system-deps.sh does)",
    };
    let Ok(out) = Command::new("java").arg("-version").output() else {
        return Err(missing);
    };
    // `openjdk version "17.0.15" 2025-04-15` on stderr.
    let text = String::from_utf8_lossy(&out.stderr);
    let major = text
        .split('"')
        .nth(1)
        .and_then(|v| v.split('.').next())
        .and_then(|m| m.parse::<u32>().ok())
        .ok_or(missing)?;
    if major != 11 && major != 17 {
        return Err(Error::Cluster(format!(
            "Cassandra {CASSANDRA_VERSION} runs on Java 11 or 17; `java` here is version {major}"
        )));
    }
    Ok(major)
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
}

/// The last `n` non-empty lines of `text`, joined with " | ".
pub(crate) fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}
