//! Faults: locks.
