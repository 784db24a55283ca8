//! Faults: integrity.
