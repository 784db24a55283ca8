//! Faults: config_seeds.
