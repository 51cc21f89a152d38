//! `[Template]` blocks: a machine's keys and sections written once and
//! instantiated by `[Machine name='…' template='…']` with overrides.
//!
//! A template holds what a `[Machine]` holds (its keys but `name`, and its
//! `[Networks]`, `[Protocols]`, `[Applications]`, `[Routes]` sections; a
//! `[Network]`, `[Protocol]` or `[Application]` may also stand directly
//! under the template). A machine that names it gets, in order:
//!
//! - the template's keys, each overridden by the machine's own;
//! - the template's networks, then the machine's; a machine network with
//!   the id of a template network replaces it (to pin another `ip=`);
//! - the template's protocols; a machine protocol of the same `name`
//!   overrides the template's options one by one;
//! - the template's applications; the machine's *n*-th application of a
//!   name overrides the options of the template's *n*-th application of
//!   that name (nested blocks: the machine's, if it has any, replace the
//!   template's); other applications are added;
//! - the template's routes, then the machine's.
//!
//! A template may build on an earlier one (`template='base'`, the same
//! merge). Templates must be declared before the machines that use them,
//! so no chain of templates can loop. Expansion happens on the block
//! tree, before lowering: every value keeps its place in the file, so an
//! error in a template's option points at the template's line.
//!
//! # Gaps
//! - Overrides add or change; nothing inherited can be removed (declare
//!   another template).
//! - A template's contents are checked where a machine uses it; an unused
//!   template is checked for its keys and sections only.

use super::{Lower, MACHINE_KEYS, MACHINE_SECTIONS};
use crate::error::{ErrorKind, NdlError};
use crate::parser::{Block, Param, Span, Spanned};
use crate::suggest;
use elvis_scenario::Loc;
use std::borrow::Cow;

/// A declared template: its flattened body, as an owned block (the
/// source's blocks are dropped as they are lowered).
pub(super) struct Template {
    pub(super) body: Block<'static>,
    pub(super) loc: Loc,
}

fn owned_text(t: &Spanned<Cow<'_, str>>) -> Spanned<Cow<'static, str>> {
    Spanned {
        node: Cow::Owned(t.node.to_string()),
        span: t.span,
    }
}

/// Returns an owned copy of `b` and its nested blocks.
fn owned(b: &Block<'_>) -> Block<'static> {
    Block {
        keyword: owned_text(&b.keyword),
        params: b
            .params
            .iter()
            .map(|p| Param {
                key: owned_text(&p.key),
                value: owned_text(&p.value),
            })
            .collect(),
        children: b.children.iter().map(owned).collect(),
        depth: b.depth,
        span: b.span,
    }
}

/// Overrides `base`'s options with `over`'s (same key, case-insensitive),
/// appending the new ones, and leaving out `skip`.
fn merge_params(
    base: &[Param<'static>],
    over: &[Param<'static>],
    skip: &[&str],
) -> Vec<Param<'static>> {
    let kept = |p: &&Param| !skip.iter().any(|s| p.key.node.eq_ignore_ascii_case(s));
    let mut out: Vec<Param<'static>> = base.iter().filter(kept).cloned().collect();
    for p in over.iter().filter(kept) {
        match out
            .iter_mut()
            .find(|q| q.key.node.eq_ignore_ascii_case(&p.key.node))
        {
            Some(q) => q.value = p.value.clone(),
            None => out.push(p.clone()),
        }
    }
    out
}

fn value_of<'b>(b: &'b Block<'static>, key: &str) -> Option<&'b str> {
    b.param(key).map(|p| p.value.node.as_ref())
}

/// One merged section of a machine: its keyword, where it was written
/// (for errors about the section itself) and its entries.
struct Section {
    keyword: &'static str,
    span: Option<Span>,
    entries: Vec<Block<'static>>,
}

impl Section {
    fn new(keyword: &'static str) -> Self {
        Section {
            keyword,
            span: None,
            entries: Vec::new(),
        }
    }

    fn into_block(self, depth: usize) -> Option<Block<'static>> {
        let span = self.span?;
        Some(Block {
            keyword: Spanned {
                node: Cow::Borrowed(self.keyword),
                span,
            },
            params: Vec::new(),
            children: self.entries,
            depth,
            span,
        })
    }
}

/// The merged sections of a machine, in the order machines list them.
struct Sections {
    networks: Section,
    protocols: Section,
    applications: Section,
    routes: Section,
    /// Anything else, kept for the machine's lowering to report.
    other: Vec<Block<'static>>,
}

impl Sections {
    fn new() -> Self {
        Sections {
            networks: Section::new("Networks"),
            protocols: Section::new("Protocols"),
            applications: Section::new("Applications"),
            routes: Section::new("Routes"),
            other: Vec::new(),
        }
    }

    /// Adds the sections of `b` (a template's or machine's children),
    /// applying the override rules of the module docs.
    fn add(&mut self, b: &Block<'static>) {
        // The n-th application of each name, counted in this block.
        let mut seen: Vec<(String, usize)> = Vec::new();
        for c in &b.children {
            let (sec, entries): (&mut Section, Vec<&Block<'static>>) = if c.is("Networks") {
                (&mut self.networks, c.children.iter().collect())
            } else if c.is("Network") {
                (&mut self.networks, vec![c])
            } else if c.is("Protocols") {
                (&mut self.protocols, c.children.iter().collect())
            } else if c.is("Protocol") {
                (&mut self.protocols, vec![c])
            } else if c.is("Applications") {
                (&mut self.applications, c.children.iter().collect())
            } else if c.is("Application") {
                (&mut self.applications, vec![c])
            } else if c.is("Routes") {
                (&mut self.routes, c.children.iter().collect())
            } else if c.is("Route") {
                (&mut self.routes, vec![c])
            } else {
                self.other.push(c.clone());
                continue;
            };
            sec.span = sec.span.or(Some(c.head()));
            let kw = sec.keyword;
            for e in entries {
                match kw {
                    "Networks" => override_by(&mut sec.entries, e, "id", false, 1),
                    "Protocols" => override_by(&mut sec.entries, e, "name", true, 1),
                    "Applications" => {
                        let name = value_of(e, "name").unwrap_or_default().to_ascii_lowercase();
                        let n = match seen.iter_mut().find(|(s, _)| *s == name) {
                            Some((_, n)) => {
                                *n += 1;
                                *n
                            }
                            None => {
                                seen.push((name, 1));
                                1
                            }
                        };
                        override_by(&mut sec.entries, e, "name", true, n);
                    }
                    _ => sec.entries.push(e.clone()),
                }
            }
        }
    }

    fn into_children(self, depth: usize) -> Vec<Block<'static>> {
        let mut out = Vec::new();
        for s in [
            self.networks,
            self.routes,
            self.protocols,
            self.applications,
        ] {
            out.extend(s.into_block(depth + 1));
        }
        out.extend(self.other);
        out
    }
}

/// Overrides the `nth` entry of `entries` whose `key` equals `e`'s with
/// `e` (options merged; `e`'s nested blocks, if any, replace the old
/// ones), or appends `e`. An entry without `key` is appended as is.
fn override_by(
    entries: &mut Vec<Block<'static>>,
    e: &Block<'static>,
    key: &str,
    ignore_case: bool,
    nth: usize,
) {
    let same = |a: &str, b: &str| {
        if ignore_case {
            a.eq_ignore_ascii_case(b)
        } else {
            a == b
        }
    };
    let target = value_of(e, key).and_then(|v| {
        entries
            .iter()
            .enumerate()
            .filter(|(_, x)| x.is(&e.keyword.node) && value_of(x, key).is_some_and(|w| same(v, w)))
            .nth(nth - 1)
            .map(|(i, _)| i)
    });
    match target {
        Some(i) => {
            let old = &mut entries[i];
            old.params = merge_params(&old.params, &e.params, &[]);
            if !e.children.is_empty() {
                old.children = e.children.clone();
            }
        }
        None => entries.push(e.clone()),
    }
}

/// Returns a block like `b` with no options and no nested blocks: the
/// base of a template or machine that builds on nothing.
fn empty(b: &Block<'static>) -> Block<'static> {
    Block {
        keyword: b.keyword.clone(),
        params: Vec::new(),
        children: Vec::new(),
        depth: b.depth,
        span: b.span,
    }
}

/// Returns `over` (a machine or template block) expanded on `base` (a
/// flattened template body): `over`'s keyword, name and span, the merged
/// keys without `template`, the merged sections.
fn expand(base: &Block<'static>, over: &Block<'static>) -> Block<'static> {
    let mut params = merge_params(&base.params, &over.params, &["name", "template"]);
    if let Some(name) = over.param("name") {
        params.insert(0, name.clone());
    }
    let mut sections = Sections::new();
    sections.add(base);
    sections.add(over);
    Block {
        keyword: over.keyword.clone(),
        params,
        children: sections.into_children(over.depth),
        depth: over.depth,
        span: over.span,
    }
}

impl Lower<'_> {
    /// Declares the templates of a top-level `[Template]` block, or of the
    /// `[Template]` blocks in a `[Templates]` section.
    pub(super) fn templates(&mut self, b: &Block<'_>) {
        if b.is("Templates") {
            self.keys(b, &[]);
            for c in &b.children {
                if c.is("Template") {
                    self.template(c);
                } else {
                    self.unexpected(c, Some(&b.keyword.node), &["Template"]);
                }
            }
        } else {
            self.template(b);
        }
    }

    fn template(&mut self, b: &Block<'_>) {
        let mut allowed: Vec<&str> = MACHINE_KEYS.to_vec();
        allowed.push("template");
        self.keys(b, &allowed);
        let mut sections: Vec<&str> = MACHINE_SECTIONS.to_vec();
        sections.extend(["Network", "Protocol", "Application"]);
        let section = |c: &Block<'_>| sections.iter().any(|s| c.is(s));
        for c in b.children.iter().filter(|c| !section(c)) {
            self.unexpected(c, Some(&b.keyword.node), MACHINE_SECTIONS);
        }
        let Some(name) = self.required(b, "name") else {
            return;
        };
        let name_s = name.value.node.to_string();
        let loc = self.loc(name.value.span);
        if let Some(first) = self.templates.get(&name_s) {
            let hint = Some(format!("the first is at {}", super::at(first.loc)));
            let msg = format!("template '{name_s}' is declared twice");
            return self.error(ErrorKind::Duplicate, name.value.span, msg, hint);
        }
        let mut body = owned(b);
        // Reported above, once: not again in every machine using it.
        body.children.retain(|c| section(c));
        let base = match b.param("template") {
            Some(base) => match self.templates.get(base.value.node.as_ref()) {
                Some(t) => t.body.clone(),
                None => {
                    let base_loc = self.loc(base.value.span);
                    self.template_uses
                        .push((base.value.node.to_string(), base_loc));
                    empty(&body)
                }
            },
            None => empty(&body),
        };
        let body = expand(&base, &body);
        self.templates.insert(name_s, Template { body, loc });
    }

    /// Returns machine block `b` expanded on its `template=`, or `None`
    /// when it names none. An unknown template is recorded (reported at
    /// the end, when a later declaration can be named) and the machine is
    /// lowered without it.
    pub(super) fn instantiate(&mut self, b: &Block<'_>) -> Option<Block<'static>> {
        let t = b.param("template")?;
        let me = owned(b);
        match self.templates.get(t.value.node.as_ref()) {
            Some(tpl) => Some(expand(&tpl.body, &me)),
            None => {
                let loc = self.loc(t.value.span);
                self.template_uses.push((t.value.node.to_string(), loc));
                Some(expand(&empty(&me), &me))
            }
        }
    }

    /// Reports the `template=` references that named no template declared
    /// before them.
    pub(super) fn check_template_uses(&mut self) {
        let names: Vec<&str> = self.templates.keys().map(String::as_str).collect();
        let mut errors = Vec::new();
        for (name, loc) in &self.template_uses {
            let (msg, hint) = match self.templates.get(name) {
                Some(t) => (
                    format!(
                        "template '{name}' is used before it is declared (at {})",
                        super::at(t.loc)
                    ),
                    "move the `[Template]` block above the blocks that use it".to_string(),
                ),
                None => (
                    format!("unknown template '{name}'"),
                    match suggest(name, &names) {
                        Some(s) => format!("did you mean '{s}'?"),
                        None => format!("declare it above: [Template name='{name}']"),
                    },
                ),
            };
            errors.push(NdlError::new(ErrorKind::UnknownReference, *loc, msg).hint(hint));
        }
        self.errors.extend(errors);
    }
}
