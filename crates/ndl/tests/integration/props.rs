//! No input makes the parser panic.

use crate::FIG2;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn parse_never_panics_on_arbitrary_strings(s in "\\PC*") {
        let _ = elvis_ndl::parse_all(&s, "fuzz.ndl");
    }

    #[test]
    fn parse_never_panics_on_ndl_like_strings(s in "([\\[\\]'\"=\\\\{}\\t\\n\\r #/a-zA-Z0-9.-]|µ|    ){0,200}") {
        let _ = elvis_ndl::parse_all(&s, "fuzz.ndl");
    }

    #[test]
    fn offload_values_never_panic_and_their_errors_point_inside_the_text(
        v in "(tso|gro|linux|none|us|[a-z0-9 ,.µ-]|\\\\'){0,12}"
    ) {
        let src = format!(
            "[Networks]\n\t[Network id='1']\n[Machines]\n\t[Machine name='a' offload='{v}' rx_usecs='{v}']\n"
        );
        if let Err(errors) = elvis_ndl::parse_all(&src, "o.ndl") {
            for e in errors {
                prop_assert!((e.loc.offset + e.loc.len) as usize <= src.len());
                prop_assert!(src.is_char_boundary(e.loc.offset as usize));
                let _ = e.render_fancy(&src);
            }
        }
    }

    #[test]
    fn parse_never_panics_on_mutations_of_fig2(
        edits in prop::collection::vec((any::<prop::sample::Index>(), 0u8..4, any::<char>()), 1..8)
    ) {
        let mut s: Vec<char> = FIG2.chars().collect();
        for (at, op, c) in edits {
            let i = at.index(s.len() + 1);
            match op {
                0 if i < s.len() => { s.remove(i); }
                1 if i < s.len() => s[i] = c,
                2 => s.insert(i, c),
                _ => s.insert(i, ['[', ']', '\'', '\t', '\n', '{', '\\'][i % 7]),
            }
        }
        let text: String = s.into_iter().collect();
        if let Err(e) = elvis_ndl::parse(&text, "m.ndl") {
            // Every error points inside the text and renders.
            prop_assert!(e.loc.offset as usize <= text.len());
            let _ = e.render_fancy(&text);
        }
    }
}
