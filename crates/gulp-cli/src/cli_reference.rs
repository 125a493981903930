//! docs/reference/cli.md is generated from the command line's clap
//! definitions; this test fails when the committed page differs from what
//! they give. `GULP_UPDATE_DOCS=1 cargo test -p gulp-cli cli_reference`
//! writes the page.

use std::path::PathBuf;

use clap::CommandFactory;

use crate::cli::Cli;

/// Where the page lives, from this crate's directory.
fn page_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/reference/cli.md")
}

/// The page: a short header for the site, then clap-markdown's rendering.
fn generate() -> String {
    let options = clap_markdown::MarkdownOptions::new()
        .title("The gulp command".to_string())
        .show_footer(false)
        .show_table_of_contents(true);
    let body = clap_markdown::help_markdown_command_custom(&Cli::command(), &options);
    format!(
        "<!-- Generated from crates/gulp-cli/src/cli.rs by `GULP_UPDATE_DOCS=1 cargo test -p gulp-cli cli_reference`; do not edit. -->\n\n{}\n",
        body.trim_end().replacen(
            "This document contains the help content for the `gulp` command-line program.",
            "For users looking up a command or a flag: every `gulp` command with its arguments, \
             as `gulp COMMAND --help` prints them (this page is generated from them). Exit \
             status: 0 success, 1 problems found (`check`, `lint`) or chunks missing \
             (`status`), 2 an error.",
            1,
        )
    )
}

#[test]
fn cli_reference_page_is_up_to_date() {
    let path = page_path();
    let generated = generate();
    if std::env::var_os("GULP_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &generated).expect("write docs/reference/cli.md");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{} differs from the command line's definitions: run `GULP_UPDATE_DOCS=1 cargo test -p gulp-cli cli_reference` and commit the page",
        path.display()
    );
}
