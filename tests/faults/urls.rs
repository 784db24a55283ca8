//! Faults: urls.
