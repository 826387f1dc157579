//! The CSV files of the benches, written by the `csv` crate from one row
//! type per file: the type's fields are the columns, in order, and its
//! serializers fix how many decimals a figure keeps. An absent figure
//! (`None`) is an empty cell.

use serde::{Serialize, Serializer};

/// The rows as CSV: a header of the row type's field names, then one line
/// per row.
pub fn to_csv<R: Serialize>(rows: impl IntoIterator<Item = R>) -> Result<String, String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    for row in rows {
        w.serialize(row)
            .map_err(|e| format!("encoding a CSV row: {e}"))?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| format!("encoding CSV: {}", e.error()))?;
    String::from_utf8(bytes).map_err(|e| format!("encoding CSV: {e}"))
}

/// The header line of `R`'s CSV (with its line end), taken from a default
/// row: for a file whose rows come later, one at a time.
pub fn header<R: Serialize + Default>() -> Result<String, String> {
    let one = to_csv([R::default()])?;
    let end = one.find('\n').map_or(one.len(), |i| i + 1);
    Ok(one[..end].to_string())
}

/// One row without a header (with its line end).
pub fn row<R: Serialize>(r: &R) -> Result<String, String> {
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    w.serialize(r)
        .map_err(|e| format!("encoding a CSV row: {e}"))?;
    let bytes = w
        .into_inner()
        .map_err(|e| format!("encoding CSV: {}", e.error()))?;
    String::from_utf8(bytes).map_err(|e| format!("encoding CSV: {e}"))
}

/// Serializers of figures with a fixed number of decimals, for
/// `#[serde(serialize_with = "...")]`.
pub mod fixed {
    use super::*;

    fn fixed<S: Serializer>(v: Option<f64>, decimals: usize, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.serialize_str(&format!("{v:.decimals$}")),
            None => s.serialize_none(),
        }
    }

    /// One decimal.
    pub fn d1<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        fixed(Some(*v), 1, s)
    }

    /// Three decimals.
    pub fn d3<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        fixed(Some(*v), 3, s)
    }

    /// Six decimals.
    pub fn d6<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        fixed(Some(*v), 6, s)
    }

    /// One decimal, or an empty cell.
    pub fn opt_d1<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        fixed(*v, 1, s)
    }

    /// Three decimals, or an empty cell.
    pub fn opt_d3<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        fixed(*v, 3, s)
    }

    /// Six decimals, or an empty cell.
    pub fn opt_d6<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        fixed(*v, 6, s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default, Serialize)]
    struct Row {
        name: String,
        #[serde(serialize_with = "fixed::d3")]
        x: f64,
        #[serde(serialize_with = "fixed::opt_d6")]
        y: Option<f64>,
        n: Option<u64>,
    }

    #[test]
    fn rows_get_a_header_fixed_decimals_empty_cells_and_quotes() {
        let rows = [
            Row {
                name: "shale (default)".into(),
                x: 1.0 / 3.0,
                y: Some(0.5),
                n: Some(7),
            },
            Row {
                name: "a \"quoted\", label".into(),
                x: 2.0,
                y: None,
                n: None,
            },
        ];
        let text = to_csv(&rows).expect("csv");
        assert_eq!(
            text,
            "name,x,y,n\nshale (default),0.333,0.500000,7\n\"a \"\"quoted\"\", label\",2.000,,\n"
        );
        assert_eq!(header::<Row>().expect("header"), "name,x,y,n\n");
        assert_eq!(
            row(&rows[0]).expect("row"),
            "shale (default),0.333,0.500000,7\n"
        );
    }
}
