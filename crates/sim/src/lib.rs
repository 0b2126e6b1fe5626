//! capo-sim.
