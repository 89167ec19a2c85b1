//! Checking one write against the site's word filters: 1,000 filters (the
//! most that can exist), one 10,000-character post, the decided bound
//! 100 µs. Plain ASCII text, and the same text with non-ASCII letters
//! (NFKC and the look-alike folding run over every character).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use plaza_domain::word_filters::{
    FilterAction, FilterScope, MAX_FILTERS, WordFilter, WordFilterSet,
};

/// `MAX_FILTERS` distinct filters of one to three made-up words.
fn filters() -> Vec<WordFilter> {
    let actions = [FilterAction::Block, FilterAction::Hold, FilterAction::Flag];
    (0..MAX_FILTERS)
        .map(|n| WordFilter {
            id: n + 1,
            phrase: match n % 3 {
                0 => format!("zq{n}x"),
                1 => format!("spam word{n}"),
                _ => format!("buy cheap item{n} now"),
            },
            action: actions[usize::try_from(n % 3).unwrap_or(0)],
            whole_word: n % 2 == 0,
            applies_to: FilterScope::ALL.to_vec(),
            created_at: 0,
            created_by: None,
        })
        .collect()
}

/// About `chars` characters of ordinary prose holding none of the phrases.
fn post(chars: usize, word: &str) -> String {
    let mut text = String::with_capacity(chars + 16);
    let mut n = 0usize;
    while text.chars().count() < chars {
        text.push_str(word);
        text.push_str(if n % 12 == 11 { ".\n" } else { " " });
        n += 1;
    }
    text.chars().take(chars).collect()
}

fn word_filters(c: &mut Criterion) {
    let set = WordFilterSet::compile(&filters());
    let ascii = post(10_000, "the quick brown fox jumps over lazy dogs");
    let accented = post(
        10_000,
        "caf\u{e9} na\u{ef}ve r\u{e9}sum\u{e9} \u{fc}ber stra\u{df}e",
    );
    assert_eq!(ascii.chars().count(), 10_000);
    assert!(
        set.check(FilterScope::Post, &[("content", &ascii)])
            .blocked
            .is_none()
    );
    c.bench_function(
        "word filters: 1,000 filters, 10,000-character ASCII post",
        |b| {
            b.iter(|| {
                black_box(set.check(
                    FilterScope::Post,
                    &[("title", "A title"), ("content", black_box(&ascii))],
                ))
            })
        },
    );
    c.bench_function(
        "word filters: 1,000 filters, 10,000-character accented post",
        |b| {
            b.iter(|| {
                black_box(set.check(
                    FilterScope::Post,
                    &[("title", "A title"), ("content", black_box(&accented))],
                ))
            })
        },
    );
    c.bench_function("normalising alone: 10,000-character accented post", |b| {
        b.iter(|| black_box(plaza_domain::phrases::normalize(black_box(&accented))))
    });
}

criterion_group!(benches, word_filters);
criterion_main!(benches);
