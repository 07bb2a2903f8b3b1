//! `gatefix completions SHELL` and `gatefix man`: generated from the same clap definition the
//! parser uses, so they cannot drift from the real options.

use std::io::Write;

use clap::Args;
use clap_complete::Shell;

use crate::error::{Error, Result, exit};

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell. Install, e.g.:
    /// `gatefix completions bash > ~/.local/share/bash-completion/completions/gatefix`.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// `command` is the whole parser (`Cli::command()`), handed in by the dispatcher.
pub fn completions(args: CompletionsArgs, mut command: clap::Command) -> Result<i32> {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut command, "gatefix", &mut out);
    write_stdout(&out)
}

/// The man page (roff) of gatefix and its subcommands, in one page: `gatefix man > gatefix.1`.
pub fn man(command: clap::Command) -> Result<i32> {
    let mut out = Vec::new();
    let page = clap_mangen::Man::new(command.clone());
    page.render(&mut out)
        .map_err(|e| Error::input(format!("man page: {e}")))?;
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = sub.get_name().to_string();
        let sub = sub.clone().bin_name(format!("gatefix {name}"));
        let page = clap_mangen::Man::new(sub);
        out.extend_from_slice(b".SH \"GATEFIX ");
        out.extend_from_slice(name.to_uppercase().as_bytes());
        out.extend_from_slice(b"\"\n");
        page.render_synopsis_section(&mut out)
            .and_then(|()| page.render_description_section(&mut out))
            .and_then(|()| page.render_options_section(&mut out))
            .map_err(|e| Error::input(format!("man page: {e}")))?;
    }
    write_stdout(&out)
}

fn write_stdout(bytes: &[u8]) -> Result<i32> {
    // A closed pipe (`gatefix man | head`) is not an error worth a panic.
    let _ = std::io::stdout().lock().write_all(bytes);
    Ok(exit::OK)
}
