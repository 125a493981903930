//! The `gulp` command.
fn main() {}
