//! The library's error type.
//!
//! Every variant names what failed and where (a path, a line, a URL) so that the
//! message printed by a stage binary tells the user what to do next.

use std::path::PathBuf;

/// Errors raised by the trawl library.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An I/O operation on a file or directory failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A Parquet file could not be read or written.
    #[error("{path}: parquet: {source}")]
    Parquet {
        /// The Parquet file involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: parquet::errors::ParquetError,
    },
    /// Record batches could not be built or decoded.
    #[error("{context}: arrow: {message}")]
    Arrow {
        /// What was being converted (dataset or file).
        context: String,
        /// The underlying error message.
        message: String,
    },
    /// The configuration file is invalid.
    #[error("config {path}: {message}")]
    Config {
        /// The configuration file.
        path: PathBuf,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A user-supplied input (seed file, rule file, argument) is invalid.
    #[error("{input}: {message}")]
    Input {
        /// The input that is wrong, with its location (file:line when known).
        input: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// The crawl directory is not in the state the stage expects.
    #[error("{path}: {message}")]
    CrawlDir {
        /// The directory involved.
        path: PathBuf,
        /// What is wrong and what to do about it.
        message: String,
    },
    /// The crawldb (or another locked dataset) is locked by another process.
    #[error("{path} is locked: {message}")]
    Locked {
        /// The lock file.
        path: PathBuf,
        /// Who holds it and how to clear it.
        message: String,
    },
    /// A URL could not be parsed or was rejected.
    #[error("url {url:?}: {reason}")]
    Url {
        /// The URL as given.
        url: String,
        /// Why it was rejected.
        reason: String,
    },
    /// A network-level failure outside a single fetch (binding a socket, building a client).
    #[error("network: {0}")]
    Net(String),
    /// A stored dataset is incomplete or altered (a part missing, a size or checksum
    /// that does not match its manifest). Never read past: the message names the file
    /// and the way back (the previous version in `old/`).
    #[error("{path}: integrity: {message}")]
    Integrity {
        /// The dataset or part file that failed its check.
        path: PathBuf,
        /// What does not match and how to recover.
        message: String,
    },
    /// The search index could not be opened, written or read.
    #[error("index: {message}")]
    Index {
        /// What failed (naming the index directory) and what to do.
        message: String,
    },
    /// A search query is empty or malformed.
    #[error("query {query:?}: {message}")]
    Query {
        /// The query as given.
        query: String,
        /// What is wrong with it and how to write it.
        message: String,
    },
    /// A bug in trawl, not a problem of the input or the crawl directory: the message
    /// says what the code found that it should never find.
    #[error("internal error: {message} (a bug in trawl: please report it)")]
    Internal {
        /// What went wrong.
        message: String,
    },
    /// The stage was stopped by SIGINT or SIGTERM (see [`crate::signal`]).
    #[error("interrupted by {signal}: {message}")]
    Interrupted {
        /// `SIGINT` or `SIGTERM`.
        signal: String,
        /// What the stage left behind and what to do next.
        message: String,
    },
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// Wraps a Parquet error with the file it concerns.
    pub fn parquet(path: impl Into<PathBuf>, source: parquet::errors::ParquetError) -> Self {
        Error::Parquet {
            path: path.into(),
            source,
        }
    }

    /// Wraps an Arrow or serde_arrow error with the dataset it concerns.
    pub fn arrow(context: impl Into<String>, err: impl std::fmt::Display) -> Self {
        Error::Arrow {
            context: context.into(),
            message: err.to_string(),
        }
    }

    /// A crawl-directory state error.
    pub fn crawl_dir(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Error::CrawlDir {
            path: path.into(),
            message: message.into(),
        }
    }

    /// An invalid user input.
    pub fn input(input: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Input {
            input: input.into(),
            message: message.into(),
        }
    }
}

/// Adds a path to `std::io::Result`s.
pub trait IoContext<T> {
    /// Attaches `path` to the error, if any.
    fn at(self, path: impl Into<PathBuf>) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn at(self, path: impl Into<PathBuf>) -> Result<T> {
        self.map_err(|e| Error::io(path, e))
    }
}
