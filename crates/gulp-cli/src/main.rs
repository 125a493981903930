//! The `gulp` binary.
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    gulp_cli::run(std::env::args_os())
}
