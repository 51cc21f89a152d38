//! What a `web_server` serves: sized objects (`/obj/504KB`) and the pages
//! of a site drawn from a workload model (`/page/17`), as real HTML whose
//! `<img src>` point at sized objects and whose `<a href>` point at other
//! pages.
//!
//! Page `i` is drawn from its own stream (SplitMix64 seeded with `i`), so
//! every server with the same model and page count serves the same site,
//! and asking twice gives the same page. The HTML's markup is real bytes;
//! a page larger than its markup is filled with real text up to
//! [`REAL_FILL`] bytes and, past that, with a comment of virtual payload
//! (zeros that cost no memory), which parsers skip.

use crate::model::Model;
use elvis_api::Message;

/// Real filler text a page carries at most; the rest is virtual.
pub const REAL_FILL: usize = 16 * 1024;

/// What a path names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    /// `/obj/<size>`: that many bytes.
    Object(u64),
    /// `/page/<i>` (and `/`, page 0).
    Page(u64),
}

/// Returns what `path` names, or `None` (a 404).
pub fn resource(path: &str, pages: u64) -> Option<Resource> {
    let path = path.split(['?', '#']).next().unwrap_or("");
    if path == "/" || path == "/index.html" {
        return Some(Resource::Page(0));
    }
    if let Some(s) = path.strip_prefix("/obj/") {
        return parse_size(s).map(Resource::Object);
    }
    let i: u64 = path.strip_prefix("/page/")?.parse().ok()?;
    (i < pages).then_some(Resource::Page(i))
}

/// Parses a size: a number with an optional unit, `B`, `KB`/`K` (1,000),
/// `KiB` (1,024), `MB`, `MiB`, `GB`, `GiB` (case-insensitive).
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num.parse().ok()?;
    let mult = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "kib" => 1024.0,
        "m" | "mb" => 1e6,
        "mib" => 1024.0 * 1024.0,
        "g" | "gb" => 1e9,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let v = n * mult;
    (0.0..=1e12).contains(&v).then_some(v.round() as u64)
}

/// SplitMix64: the page streams.
pub struct SplitMix(pub u64);

impl SplitMix {
    /// Returns the next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// A page, drawn from the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    /// The HTML's size, bytes.
    pub size: u64,
    /// The pages linked.
    pub links: Vec<u64>,
    /// The images' sizes, bytes.
    pub images: Vec<u64>,
}

/// Draws page `i` of a site of `pages` pages.
pub fn page(model: &Model, pages: u64, i: u64) -> Page {
    let mut r = SplitMix(i.wrapping_mul(0xA076_1D64_78BD_642F) ^ 0x5157);
    let size = model.draw_page_size(r.next_u64());
    let n_img = model.draw_images(r.next_u64());
    let n_links = model.draw_links(r.next_u64());
    let images = (0..n_img)
        .map(|_| model.draw_image_size(r.next_u64()))
        .collect();
    let links = (0..n_links).map(|_| r.next_u64() % pages.max(1)).collect();
    Page {
        size,
        links,
        images,
    }
}

/// Returns page `i`'s HTML: real markup, then filler up to its size.
pub fn html(p: &Page, i: u64) -> Message {
    use std::io::Write;
    let mut s: Vec<u8> = Vec::with_capacity(256 + 48 * (p.images.len() + p.links.len()));
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html><head><title>Page {i}</title></head>\n<body><h1>Page {i}</h1>\n"
    );
    for (k, size) in p.images.iter().enumerate() {
        let _ = writeln!(s, "<img src=\"/obj/{size}\" alt=\"image {k}\">");
    }
    for l in &p.links {
        let _ = writeln!(s, "<p><a href=\"/page/{l}\">page {l}</a></p>");
    }
    const END: &[u8] = b"</body></html>\n";
    let want = p.size as usize;
    let room = want.saturating_sub(s.len() + END.len());
    let real = room.min(REAL_FILL);
    const WORDS: &[u8] = b"lorem ipsum dolor sit amet consectetur adipiscing elit ";
    s.extend(WORDS.iter().cycle().take(real));
    let mut m = Message::from_vec(s);
    // Past the real filler, a comment of virtual payload: `<!--` zeros `-->`.
    let left = room - real;
    if left >= 8 {
        m.append(Message::from_static(b"<!--"));
        m.append(Message::zeros((left - 7) as u64));
        m.append(Message::from_static(b"-->"));
    } else {
        m.append(Message::from_vec(vec![b' '; left]));
    }
    m.append(Message::from_static(END));
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_objects_and_pages() {
        assert_eq!(resource("/obj/504KB", 10), Some(Resource::Object(504_000)));
        assert_eq!(resource("/obj/2KiB", 10), Some(Resource::Object(2048)));
        assert_eq!(resource("/obj/17", 10), Some(Resource::Object(17)));
        assert_eq!(resource("/page/9", 10), Some(Resource::Page(9)));
        assert_eq!(resource("/", 10), Some(Resource::Page(0)));
        assert_eq!(resource("/page/10", 10), None);
        assert_eq!(resource("/obj/5XB", 10), None);
        assert_eq!(resource("/nothing", 10), None);
    }

    #[test]
    fn a_page_is_as_large_as_drawn_and_its_links_parse_back() {
        let model = Model::surge();
        for i in 0..50 {
            let p = page(&model, 100, i);
            let h = html(&p, i);
            assert_eq!(h.len() as u64, p.size.max(h.len() as u64));
            let keep = h.len().min(64 * 1024);
            let (hrefs, srcs) = crate::http::links(&h.slice(..keep).to_vec());
            assert_eq!(hrefs.len(), p.links.len());
            assert_eq!(srcs.len(), p.images.len());
            assert_eq!(
                page(&model, 100, i),
                p,
                "pages are drawn the same way twice"
            );
        }
    }
}
