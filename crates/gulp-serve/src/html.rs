//! HTML building blocks: escaping, the page frame, bar charts. Pages are
//! rendered on the server (every view is a URL), with a small script for
//! the player and the keyboard.

use std::fmt::Write;

use axum::response::Html;

/// The stylesheet and the script, compiled in.
pub(crate) const STYLE: &str = include_str!("../assets/style.css");
pub(crate) const SCRIPT: &str = include_str!("../assets/app.js");

/// Escapes text for HTML content and quoted attributes.
pub(crate) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A query string (`a=1&b=x`) of name/value pairs, form-encoded.
pub(crate) fn query(pairs: &[(&str, &str)]) -> String {
    serde_urlencoded::to_string(pairs).unwrap_or_default()
}

/// A whole page: title, navigation line and body.
pub(crate) fn page(title: &str, nav: &str, body: &str) -> Html<String> {
    Html(format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title} · gulp serve</title>\
         <link rel=\"stylesheet\" href=\"/static/style.css\"></head>\n<body>\
         <nav><a href=\"/\">gulp serve</a>{nav}</nav>\n<main>\n<h1>{title}</h1>\n{body}\n</main>\
         <script src=\"/static/app.js\"></script></body></html>\n",
        title = esc(title),
    ))
}

/// A horizontal bar chart: one row per `(label, count)`.
pub(crate) fn bars(rows: &[(String, usize)], class: &str) -> String {
    let max = rows.iter().map(|r| r.1).max().unwrap_or(0).max(1);
    let mut out = format!("<table class=\"bars {class}\">");
    for (label, n) in rows {
        #[allow(clippy::cast_precision_loss)] // a bar's width
        let pct = (*n as f64) * 100.0 / (max as f64);
        let _ = write!(
            out,
            "<tr><th>{}</th><td class=\"n\">{n}</td><td class=\"bar\"><span style=\"width:{pct:.1}%\"></span></td></tr>",
            label
        );
    }
    out.push_str("</table>");
    out
}

/// `1234567` as `1,234,567`.
pub(crate) fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            esc("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000_000), "1,000,000");
    }

    #[test]
    fn query_encodes_reserved_characters() {
        assert_eq!(query(&[("id", "a/b c&d")]), "id=a%2Fb+c%26d");
    }
}
