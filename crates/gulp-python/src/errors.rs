//! gulp's errors as the exception classes of `gulp.errors`.
//!
//! Each class derives from `gulp.errors.GulpError` and from the built-in
//! exception a gulpio2 user would catch (`KeyError` for an unknown id,
//! `IndexError` for a frame out of range, `ValueError` for bad input,
//! `OSError` for I/O); the message is the Rust error's, which names the
//! path, id and byte offset.

use gulp_io::ErrorKind;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

/// Declares the classes of `gulp.errors` that Rust raises, once: the enum,
/// each class's Python name, and a cell per class for the imported type
/// (tests/test_errors.py checks each name is a class of `gulp.errors`).
macro_rules! classes {
    ($($class:ident => $name:literal,)*) => {
        /// The classes of `gulp.errors`, imported once.
        #[derive(Clone, Copy)]
        pub(crate) enum Class {
            $($class,)*
        }

        impl Class {
            /// The class's name in `gulp.errors`.
            fn name(self) -> &'static str {
                match self {
                    $(Class::$class => $name,)*
                }
            }

            /// The class's type, imported from `gulp.errors` on first use.
            fn cell(self) -> &'static PyOnceLock<Py<PyType>> {
                static CELLS: [PyOnceLock<Py<PyType>>; [$($name,)*].len()] =
                    [const { PyOnceLock::new() }; [$($name,)*].len()];
                &CELLS[self as usize]
            }
        }
    };
}

classes! {
    Io => "GulpIOError",
    NotFound => "GulpFileNotFoundError",
    Format => "FormatError",
    DuplicateId => "DuplicateIdError",
    UnknownId => "UnknownIdError",
    Selection => "SelectionError",
    InvalidSelection => "InvalidSelectionError",
    SelectionType => "SelectionTypeError",
    Decode => "DecodeError",
    Encode => "EncodeError",
    ChunkExists => "ChunkExistsError",
    Invalid => "InvalidInputError",
    Ingest => "IngestError",
}

impl Class {
    /// An exception of this class with `message`.
    pub(crate) fn err(self, message: impl Into<String>) -> PyErr {
        let message = message.into();
        Python::attach(
            |py| match self.cell().import(py, "gulp.errors", self.name()) {
                Ok(ty) => PyErr::from_type(ty.clone(), (message,)),
                Err(e) => e,
            },
        )
    }
}

/// The class of an I/O error: `GulpFileNotFoundError` for a missing path.
fn io_class(e: &std::io::Error) -> Class {
    if e.kind() == std::io::ErrorKind::NotFound {
        Class::NotFound
    } else {
        Class::Io
    }
}

/// A `gulp_io` error (or a codec's, which converts to one) as a Python
/// exception.
pub(crate) fn io_err(e: impl Into<gulp_io::Error>) -> PyErr {
    let e: gulp_io::Error = e.into();
    let class = match e.kind() {
        ErrorKind::Io { source, .. } => io_class(source),
        ErrorKind::Meta { .. } | ErrorKind::Record { .. } => Class::Format,
        ErrorKind::DuplicateId { .. } => Class::DuplicateId,
        ErrorKind::UnknownId { .. } => Class::UnknownId,
        ErrorKind::Selection { .. } => Class::Selection,
        ErrorKind::SelectionSyntax { .. } => Class::InvalidSelection,
        ErrorKind::Decode { .. } => Class::Decode,
        ErrorKind::Encode { .. } => Class::Encode,
        ErrorKind::ChunkExists { .. } => Class::ChunkExists,
        // The store's or the network's failure: an OSError, as a file's is.
        ErrorKind::RemoteNotFound { .. } => Class::NotFound,
        ErrorKind::Remote { .. } => Class::Io,
        ErrorKind::Labels { .. } | ErrorKind::Invalid { .. } | ErrorKind::NoObjectStore { .. } => {
            Class::Invalid
        }
    };
    class.err(e.to_string())
}

/// A `gulp_ingest` error as a Python exception.
pub(crate) fn ingest_err(e: gulp_ingest::Error) -> PyErr {
    match e {
        gulp_ingest::Error::Gulp(e) => io_err(e),
        gulp_ingest::Error::Io { ref source, .. } => io_class(source).err(e.to_string()),
        gulp_ingest::Error::Input { .. }
        | gulp_ingest::Error::Options(_)
        | gulp_ingest::Error::InvalidOption { .. }
        | gulp_ingest::Error::Rejected { .. } => Class::Invalid.err(e.to_string()),
        gulp_ingest::Error::IdExists { .. } => Class::DuplicateId.err(e.to_string()),
        gulp_ingest::Error::Item { .. }
        | gulp_ingest::Error::WorkerPanic { .. }
        | gulp_ingest::Error::Locked { .. }
        | gulp_ingest::Error::WriterStopped { .. }
        | gulp_ingest::Error::Merge(_) => Class::Ingest.err(e.to_string()),
    }
}

/// A `gulp_lint` error as a Python exception.
pub(crate) fn lint_err(e: gulp_lint::Error) -> PyErr {
    match e {
        gulp_lint::Error::Read(e) | gulp_lint::Error::Open { source: e, .. } => io_err(e),
        gulp_lint::Error::Write {
            ref path,
            ref source,
        } => os_err("writing", path, source),
        gulp_lint::Error::Options(_) | gulp_lint::Error::Internal(_) => {
            Class::Invalid.err(e.to_string())
        }
    }
}

/// A plain I/O error on `path` as a Python exception.
pub(crate) fn os_err(op: &str, path: &std::path::Path, e: &std::io::Error) -> PyErr {
    io_class(e).err(format!("{op} {}: {e}", path.display()))
}
