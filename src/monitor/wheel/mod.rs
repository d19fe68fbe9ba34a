//! wheel
