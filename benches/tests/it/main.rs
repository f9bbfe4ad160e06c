//! The integration tests of `benches`, one binary: the baselines are fair to the mapper and
//! the mapper's fast paths agree with its serde path (`util` holds the line damage both use).

mod util;

mod fast_paths_agree;
mod mapper_validates;
mod simd_contenders;
