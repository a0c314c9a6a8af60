//! `picture`: the whole target graph at once — every target with what a drawing needs, and every
//! dependency edge, with its kinds and whether it orders actions — and its renderings as Graphviz `dot` and Mermaid text.
//!
//! The other graph queries walk from one target and page their answer for agents; this one is
//! for pictures (the window page, `once query graph --format dot`), which need everything. It
//! stays small: a row per target of names only, no fields or schemas. It must never do I/O.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::Workspace;

/// Every target and every edge between targets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Picture {
    /// Targets, sorted by name.
    pub targets: Vec<PictureNode>,
    /// Target dependency edges, sorted: `from` depends on `to`.
    pub edges: Vec<PictureEdge>,
}

/// One target as a picture shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PictureNode {
    /// The target's name.
    pub name: String,
    /// Its kind.
    pub kind: String,
    /// Its folder, relative to the root (`.` for the root).
    pub folder: String,
    /// Its tags.
    pub tags: Vec<String>,
    /// Its capabilities' names, sorted.
    pub capabilities: Vec<String>,
}

/// One dependency between targets.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PictureEdge {
    /// The dependent.
    pub from: String,
    /// The dependency.
    pub to: String,
    /// What it is for: `normal`, `dev`, `build`, `optional` (as an ecosystem's manifest says),
    /// or `declared` (a once.toml `deps`).
    pub kinds: Vec<String>,
    /// Whether it orders actions; `false` when it would close a cycle (a test-only dependency
    /// back on a dependent), so it is recorded and orders nothing.
    pub orders: bool,
}

/// The whole graph of `ws`.
pub fn picture(ws: &Workspace) -> Picture {
    let targets = ws.targets();
    let nodes = targets
        .iter()
        .map(|t| PictureNode {
            name: t.name.clone(),
            kind: t.kind.clone(),
            folder: t.path.clone(),
            tags: t.tags.clone(),
            capabilities: t.capabilities.iter().map(|c| c.name.to_string()).collect(),
        })
        .collect();
    // Targets are sorted by name and each target's edges by dependency: already in order.
    let edges: Vec<PictureEdge> = super::edges::all_edges(ws)
        .into_iter()
        .filter_map(|e| {
            Some(PictureEdge {
                from: targets.get(e.from)?.name.clone(),
                to: targets.get(e.to)?.name.clone(),
                kinds: e.kinds.iter().map(|k| (*k).to_string()).collect(),
                orders: e.orders,
            })
        })
        .collect();
    Picture {
        targets: nodes,
        edges,
    }
}

impl Picture {
    /// Graphviz `dot`: one node per target labelled with its name and kind, dependents above
    /// their dependencies.
    pub fn to_dot(&self) -> String {
        let mut out = String::from("digraph once {\n  rankdir=TB;\n  node [shape=box];\n");
        for node in &self.targets {
            let _ = writeln!(
                out,
                "  {} [label={}];",
                dot_id(&node.name),
                dot_id(&format!("{}\n{}", node.name, node.kind))
            );
        }
        // An edge that orders nothing is dashed, as it is in Mermaid.
        for edge in &self.edges {
            let style = if edge.orders { "" } else { " [style=dashed]" };
            let _ = writeln!(
                out,
                "  {} -> {}{style};",
                dot_id(&edge.from),
                dot_id(&edge.to)
            );
        }
        out.push_str("}\n");
        out
    }

    /// A Mermaid flowchart. Mermaid ids allow few characters, so nodes get numbered ids and
    /// carry the name in a quoted label.
    pub fn to_mermaid(&self) -> String {
        let mut out = String::from("flowchart TD\n");
        for (index, node) in self.targets.iter().enumerate() {
            let _ = writeln!(
                out,
                "  t{index}[\"{}<br/><small>{}</small>\"]",
                mermaid_text(&node.name),
                mermaid_text(&node.kind)
            );
        }
        let index_of = |name: &str| {
            self.targets
                .binary_search_by(|t| t.name.as_str().cmp(name))
                .ok()
        };
        for edge in &self.edges {
            if let (Some(from), Some(to)) = (index_of(&edge.from), index_of(&edge.to)) {
                let arrow = if edge.orders { "-->" } else { "-.->" };
                let _ = writeln!(out, "  t{from} {arrow} t{to}");
            }
        }
        out
    }
}

/// A quoted `dot` id: any text, with `"` and `\` escaped and newlines as `\n`.
fn dot_id(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Text inside a Mermaid quoted label: `"` and markup characters as HTML entities.
fn mermaid_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '"' => out.push_str("#quot;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '#' => out.push_str("#35;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Picture {
        let node = |name: &str| PictureNode {
            name: name.into(),
            kind: "npm-package".into(),
            folder: format!("packages/{name}"),
            tags: vec![],
            capabilities: vec!["build".into()],
        };
        Picture {
            targets: vec![node("core"), node("we\"b<1>")],
            edges: vec![PictureEdge {
                from: "we\"b<1>".into(),
                to: "core".into(),
                kinds: vec!["normal".into()],
                orders: true,
            }],
        }
    }

    #[test]
    fn dot_quotes_every_name_and_draws_each_edge() {
        let dot = sample().to_dot();
        assert!(dot.starts_with("digraph once {"), "{dot}");
        assert!(dot.contains(r#""we\"b<1>" -> "core";"#), "{dot}");
        assert!(
            dot.contains(r#""core" [label="core\nnpm-package"];"#),
            "{dot}"
        );
        assert!(dot.trim_end().ends_with('}'), "{dot}");
    }

    #[test]
    fn mermaid_numbers_nodes_and_escapes_labels() {
        let mermaid = sample().to_mermaid();
        assert!(mermaid.starts_with("flowchart TD\n"), "{mermaid}");
        assert!(mermaid.contains("t1[\"we#quot;b#lt;1#gt;"), "{mermaid}");
        assert!(mermaid.contains("  t1 --> t0\n"), "{mermaid}");
    }
}
