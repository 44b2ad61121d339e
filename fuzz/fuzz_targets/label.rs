//! Labels: `sanitize_label` of any string is `[A-Za-z0-9._-]{1,64}` with no
//! leading dot, is idempotent, and always makes an entry name that
//! `is_entry_name` accepts; whatever `is_entry_name` accepts has that shape.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use outbox::store::{entry_id, is_entry_name, sanitize_label};

#[derive(Arbitrary, Debug)]
struct Case {
    raw: String,
    digest: [u8; 32],
    name: String,
}

fn label_shape(l: &str) -> bool {
    (1..=64).contains(&l.len())
        && !l.starts_with('.')
        && l.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

fuzz_target!(|c: Case| {
    let label = sanitize_label(&c.raw, "stdin");
    assert!(label_shape(&label), "bad label {label:?} from {:?}", c.raw);
    assert_eq!(sanitize_label(&label, "stdin"), label, "idempotent");
    assert_ne!(label, ".");
    assert_ne!(label, "..");
    let id = entry_id(&label, &c.digest);
    assert!(is_entry_name(&id), "{id:?} is not an entry name");
    assert!(!id.contains('/') && !id.starts_with('.'));
    assert!(!id.ends_with(outbox::store::META_SUFFIX));

    if is_entry_name(&c.name) {
        let (l, hex) = c.name.rsplit_once('-').unwrap();
        assert!(label_shape(l), "accepted {:?}", c.name);
        assert!((12..=64).contains(&hex.len()), "{:?}", c.name);
        assert!(!c.name.starts_with(outbox::store::TEMP_PREFIX));
        assert_eq!(sanitize_label(l, "stdin"), l);
    }
});
