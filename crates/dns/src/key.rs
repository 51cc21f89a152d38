//! Names as map keys: the wire form (length-prefixed labels, then the
//! root's zero byte) with letters lower-cased, optionally followed by a
//! record type. Such a key hashes and compares as plain bytes, without
//! regard to case (RFC 4343): `WWW.Example.` and `www.example.` have one
//! key. The key of a name less its first labels (each enclosing zone) is a
//! suffix of the name's key, so a walk up the tree costs no new name.
//! hickory's `Name` also ignores case, but hashing and comparing it goes
//! label by label through iterators, and cutting it (`trim_to`) builds a
//! new name; the cache, the zones and the server's zone index key on
//! [`Key`] instead.

use hickory_proto::rr::{Name, RecordType};

/// A name as a map key: its wire form (length-prefixed labels, then the
/// root's zero byte), letters lower-cased, then a record type (two bytes,
/// big-endian) or nothing. Built on the stack: at most 255 + 2 bytes.
pub struct Key {
    bytes: [u8; 257],
    len: usize,
    labels: usize,
}

impl Key {
    /// Returns the key of `name` (and `rtype`, if given).
    #[inline]
    pub fn new(name: &Name, rtype: Option<RecordType>) -> Key {
        let mut k = Key {
            bytes: [0; 257],
            len: 0,
            labels: 0,
        };
        for label in name.iter() {
            // hickory keeps names within 255 bytes, so no label overflows.
            k.labels += 1;
            k.bytes[k.len] = label.len() as u8;
            k.bytes[k.len + 1..k.len + 1 + label.len()].copy_from_slice(label);
            k.len += 1 + label.len();
        }
        k.len += 1; // the root label
                    // Lengths (at most 63) are below the capitals: one pass lower-cases
                    // the letters alone.
        k.bytes[..k.len].make_ascii_lowercase();
        if let Some(t) = rtype {
            k.bytes[k.len..k.len + 2].copy_from_slice(&u16::from(t).to_be_bytes());
            k.len += 2;
        }
        k
    }

    /// Returns the key's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// Returns how many labels the name has (the root not counted).
    pub fn labels(&self) -> usize {
        self.labels
    }

    /// Returns the key of the name less its `skip` first labels (all of
    /// them at most: the root), with the same type: a suffix of this key.
    pub fn suffix(&self, skip: usize) -> &[u8] {
        let mut at = 0;
        for _ in 0..skip.min(self.labels) {
            at += 1 + usize::from(self.bytes[at]);
        }
        &self.bytes[at..self.len]
    }
}

/// Returns bytes that sort as `name` does in DNSSEC canonical order
/// (RFC 4034 §6.1), which is hickory's `Ord` for names: labels compared
/// from the last, as lower-cased octet strings, a label sorting before any
/// longer label it begins, a name before the names below it. Each label,
/// last first, is written with 0 and 1 escaped as `1 0` and `1 1` and
/// ended by a 0, so plain byte order is that order: sorting by this key
/// costs a fraction of sorting names, which compare label by label
/// through iterators.
pub fn canonical(name: &Name) -> Vec<u8> {
    let mut out = Vec::with_capacity(usize::from(name.len()) + 8);
    for label in name.iter().rev() {
        for &b in label {
            let b = b.to_ascii_lowercase();
            if b <= 1 {
                out.push(1);
            }
            out.push(b);
        }
        out.push(0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_keys_sort_as_hickory_orders_names() {
        let mut names: Vec<Name> = [
            ".",
            "com.",
            "a.com.",
            "A.com.",
            "b.com.",
            "aa.com.",
            "a.a.com.",
            "z.a.com.",
            "example.",
            "a.example.",
            "yljkjljk.a.example.",
            "Z.a.example.",
            "zABC.a.EXAMPLE.",
            "z.example.",
            "*.z.example.",
            "ab.",
            "a-b.",
            "a_b.",
        ]
        .iter()
        .map(|s| Name::from_ascii(s).unwrap())
        .collect();
        // Labels holding the escaped bytes and the terminator's value,
        // as they come off the wire.
        for raw in [&[0u8][..], &[1], &[2], b"a\0", b"a\x01b", &[255], &[0, 0]] {
            let mut wire = vec![raw.len() as u8];
            wire.extend_from_slice(raw);
            wire.extend_from_slice(b"\x07example\0");
            use hickory_proto::serialize::binary::{BinDecodable, BinDecoder};
            names.push(Name::read(&mut BinDecoder::new(&wire)).unwrap());
        }
        let mut by_hickory = names.clone();
        by_hickory.sort();
        let mut by_key = names.clone();
        by_key.sort_by_cached_key(canonical);
        for (h, k) in by_hickory.iter().zip(&by_key) {
            assert_eq!(h.cmp(k), std::cmp::Ordering::Equal, "{h} / {k}");
        }
        for w in by_key.windows(2) {
            assert_eq!(w[0].cmp(&w[1]), canonical(&w[0]).cmp(&canonical(&w[1])));
        }
    }

    #[test]
    fn a_keys_suffixes_are_its_zones_keys() {
        let n = Name::from_ascii("WWW.Example.COM.").unwrap();
        let k = Key::new(&n, Some(RecordType::NS));
        for (skip, zone) in ["www.example.com.", "example.com.", "com.", "."]
            .iter()
            .enumerate()
        {
            let z = Key::new(&Name::from_ascii(zone).unwrap(), Some(RecordType::NS));
            assert_eq!(k.suffix(skip), z.as_bytes(), "{zone}");
        }
        assert_eq!(
            Key::new(&n, None).as_bytes(),
            b"\x03www\x07example\x03com\x00"
        );
    }
}
