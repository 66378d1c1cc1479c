//! The tail beyond the run: a generalized Pareto fit to the histogram's
//! tail, the checks the fit needs, spikes, and the forecast they make.

pub mod gpd;
pub mod predict;
pub mod threshold;
pub mod special;

#[cfg(test)]
mod tests;
