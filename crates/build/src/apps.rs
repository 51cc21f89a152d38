//! The applications as NDL knows them: their names, options and timing.
//!
//! The application bodies live in `elvis-apps` (written against the
//! application API only); this module maps an `[Application name='…']`
//! block to one of them ([`registry`]) and decides when each instance
//! starts and stops ([`timing`]).

pub mod registry;
pub mod timing;

pub use registry::{AppFactory, BuildCtx, ParamError};
