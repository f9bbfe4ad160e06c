//! Drift.
use std::path::Path;
pub struct Report {
    pub text: String,
    pub clean: bool,
}
pub fn compare_dirs(_a: &Path, _b: &Path) -> anyhow::Result<Report> {
    Ok(Report {
        text: String::new(),
        clean: true,
    })
}
