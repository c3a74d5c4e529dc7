//! `kith completions` and `kith man`: the scripts complete in a real bash, and the pages
//! render with groff, one per command, each naming its own options.

mod common;

use std::process::Command;

use common::{fails, ok, p};

/// What bash's completion function offers for the words typed so far.
fn bash_offers(script: &std::path::Path, words: &[&str]) -> Vec<String> {
    let line = format!(
        "source {}; COMP_WORDS=({}); COMP_CWORD={}; COMP_LINE=\"{}\"; COMP_POINT=${{#COMP_LINE}}; \
         _kith kith \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        words.iter().map(|w| format!("'{w}'")).collect::<Vec<_>>().join(" "),
        words.len() - 1,
        words.join(" ")
    );
    let out = Command::new("bash").args(["--norc", "-c", &line]).output().expect("run bash");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned).collect()
}

#[test]
fn bash_completes_commands_and_options() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("kith.bash");
    std::fs::write(&script, ok(&["completions", "bash"])).unwrap();
    let syntax = Command::new("bash").args(["-n", p(&script)]).status().unwrap();
    assert!(syntax.success());
    let top = bash_offers(&script, &["kith", "an"]);
    assert_eq!(top, ["analyze"]);
    let sub = bash_offers(&script, &["kith", "analyze", "pa"]);
    assert_eq!(sub, ["pagerank"]);
    let options = bash_offers(&script, &["kith", "analyze", "pagerank", "--it"]);
    assert_eq!(options, ["--iterations"]);
}

#[test]
fn zsh_and_fish_scripts_name_every_command() {
    for shell in ["zsh", "fish"] {
        let script = ok(&["completions", shell]);
        for command in ["graph", "layout", "store", "serve", "analyze", "pagerank", "man"] {
            assert!(script.contains(command), "{shell} script lacks {command}");
        }
    }
    let e = fails(&["completions", "tcsh"]);
    assert!(e.contains("tcsh") && e.contains("bash"), "{e}");
}

#[test]
fn man_pages_render_one_per_command() {
    let page = ok(&["man"]);
    assert!(page.starts_with(".ie") || page.contains(".TH kith 1"), "{}", &page[..200]);
    let dir = tempfile::tempdir().unwrap();
    ok(&["man", "--dir", p(dir.path())]);
    for (name, option) in [
        ("kith", "analyze"),
        ("kith-analyze-pagerank", "--iterations"),
        ("kith-store-build", "--method"),
        ("kith-serve", "--token"),
        ("kith-completions", "powershell"),
    ] {
        let path = dir.path().join(format!("{name}.1"));
        // Plain text: no bold or underline by overstriking (grotty's -c -b -u -o).
        let text =
            Command::new("groff").args(["-man", "-Tascii", "-P-cbuo", p(&path)]).output().unwrap();
        assert!(text.status.success(), "{name}");
        let text = String::from_utf8_lossy(&text.stdout);
        assert!(text.contains(option), "{name} lacks {option}: {text}");
    }
    // Every command's page, and none for `help`.
    let pages = std::fs::read_dir(dir.path()).unwrap().count();
    assert!(pages > 60, "{pages} pages");
    assert!(!dir.path().join("kith-help.1").exists());
}
