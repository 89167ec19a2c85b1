//! The cell rule of every CSV file the service writes. A spreadsheet that
//! opens a CSV file runs a cell beginning with `=`, `+`, `-`, `@`, a tab or
//! a carriage return as a formula, so text a client chose (a page path, a
//! plan name) could run in an administrator's spreadsheet (CSV injection).
//! Such a text cell gets a leading `'`, as OWASP advises, which a
//! spreadsheet shows as text (DECISIONS.md "Operations"). Numbers the
//! service computes are written as numbers, a negative one included: only
//! text goes through [`text`]. Quoting is the CSV writer's (`csv`).

use std::borrow::Cow;

/// The first characters a spreadsheet reads as the start of a formula.
const FORMULA_STARTS: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

/// `cell` as a CSV text cell: with a leading `'` when a spreadsheet would
/// read it as a formula, else unchanged.
pub fn text(cell: &str) -> Cow<'_, str> {
    if cell.starts_with(FORMULA_STARTS) {
        Cow::Owned(format!("'{cell}"))
    } else {
        Cow::Borrowed(cell)
    }
}

#[cfg(test)]
mod tests {
    use super::text;

    #[test]
    fn cells_a_spreadsheet_would_run_get_a_leading_quote() {
        for cell in [
            "=HYPERLINK(\"http://x\")",
            "+1+1",
            "-2+3",
            "@SUM(A1)",
            "\t=1",
            "\r=1",
        ] {
            assert_eq!(text(cell), format!("'{cell}"));
        }
    }

    #[test]
    fn other_cells_are_kept_as_they_are() {
        for cell in ["", "/posts/1", "a=b", "'quoted", " =1", "2026-01-31", "DE"] {
            assert_eq!(text(cell), cell);
        }
    }
}
