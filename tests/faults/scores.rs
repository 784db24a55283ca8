//! Faults: scores.
