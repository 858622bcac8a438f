//! What the relay's dashboard and the daemon's (`agentfw dashboard`) share, served by both:
//! a script that builds elements from data without ever parsing it as HTML, shows control
//! characters and invisible ones visibly, formats times, renders a conversation between two
//! agents and keeps an event stream open; the style sheet both pages start from; and how
//! both servers read their session cookie.
//!
//! It is outside the `server` feature: the `agentfw` binary serves it too.

/// `AFW.el`, `AFW.visible`, `AFW.conversationRow`, … (a classic script defining `AFW`).
pub const COMMON_JS: &str = include_str!("common.js");
/// Colours, tables, badges.
pub const COMMON_CSS: &str = include_str!("common.css");

/// The values of the cookie `name` in a request's `Cookie` headers (a browser may send it
/// more than once, for different paths).
pub fn cookies<'h>(headers: &'h hyper::HeaderMap, name: &'h str) -> impl Iterator<Item = &'h str> + 'h {
    headers
        .get_all(hyper::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .filter(move |(k, _)| *k == name)
        .map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_found_by_exact_name_in_every_header() {
        let mut h = hyper::HeaderMap::new();
        h.append(hyper::header::COOKIE, "a=1; afw=two; afw_x=3".parse().unwrap());
        h.append(hyper::header::COOKIE, "afw=four".parse().unwrap());
        assert_eq!(cookies(&h, "afw").collect::<Vec<_>>(), ["two", "four"]);
        assert_eq!(cookies(&h, "af").count(), 0);
    }
}
