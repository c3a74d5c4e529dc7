//! `kith completions <shell>` and `kith man`: shell completion scripts and man pages,
//! generated from the command line's own definition (clap_complete, clap_mangen), so they
//! cannot drift from it.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, Command};
use clap_complete::{Generator, Shell};

#[derive(Debug, Args)]
pub(crate) struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    shell: Shell,
}

#[derive(Debug, Args)]
pub(crate) struct ManArgs {
    /// Write a page per command here (kith.1, kith-graph.1, kith-graph-import.1, ...)
    /// instead of printing kith(1) to stdout.
    #[arg(long)]
    dir: Option<PathBuf>,
}

/// Prints the completion script of `cmd` for the chosen shell.
pub(crate) fn completions(mut cmd: Command, a: &CompletionsArgs) -> Result<()> {
    cmd.set_bin_name("kith");
    cmd.build();
    let mut out = std::io::stdout().lock();
    let written = a.shell.try_generate(&cmd, &mut out).and_then(|()| out.flush());
    quiet_on_closed_pipe(written).context("writing the completion script")
}

/// A reader that stopped reading (`kith completions bash | head`) is not an error.
fn quiet_on_closed_pipe(r: std::io::Result<()>) -> std::io::Result<()> {
    match r {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

/// Prints kith(1), or writes a page for every command and subcommand into `--dir`.
pub(crate) fn man(cmd: Command, a: &ManArgs) -> Result<()> {
    let Some(dir) = &a.dir else {
        let mut out = std::io::stdout().lock();
        let written = clap_mangen::Man::new(cmd).render(&mut out).and_then(|()| out.flush());
        return quiet_on_closed_pipe(written).context("writing kith(1)");
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut written = 0;
    write_pages(&cmd.name("kith"), "kith", dir, &mut written)?;
    eprintln!("kith man: {written} pages in {}", dir.display());
    Ok(())
}

/// The page of `cmd` (named `name`, its path joined by dashes) and of each subcommand.
fn write_pages(cmd: &Command, name: &str, dir: &Path, written: &mut usize) -> Result<()> {
    // clap takes a `&'static str` name without its `string` feature; the few dozen pages'
    // names live until the command exits anyway.
    let static_name: &'static str = Box::leak(name.to_owned().into_boxed_str());
    let mut page = cmd.clone().name(static_name);
    page.build();
    let path = dir.join(format!("{name}.1"));
    let man = clap_mangen::Man::new(page);
    kith_graph::durable::write_atomic(&kith_graph::durable::StdFs, &path, |w| man.render(w))
        .with_context(|| format!("writing {}", path.display()))?;
    *written += 1;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        write_pages(sub, &format!("{name}-{}", sub.get_name()), dir, written)?;
    }
    Ok(())
}
