//! Baselines the mapper is measured against.
