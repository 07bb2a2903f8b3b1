use clap::Parser;

use gatefix::cli::{Cli, run};
use gatefix::error::exit;

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let code = if err.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
            let _ = err.print();
            std::process::exit(code);
        }
    };
    match run(cli) {
        Ok(code) => std::process::exit(code),
        Err(err) => {
            eprintln!("gatefix: error: {err}");
            std::process::exit(err.exit_code());
        }
    }
}
