//! The action graph: nodes are `(target, capability)` actions, edges are
//! capability dependencies; plus the target-level adjacency derived from it.
//!
//! Built once at load with indices only (no strings), so queries are cheap.
//! Every traversal here is iterative: it must never recurse (deep graphs would
//! overflow the stack) and never be worse than linear in nodes + edges.

use std::collections::VecDeque;

/// Index of an action in the graph.
pub type ActionId = u32;

/// The dependency graph of a workspace, by index.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    /// First action of each target; `base[t]..base[t + 1]` are its actions (in capability order).
    base: Vec<u32>,
    /// Target of each action.
    action_target: Vec<u32>,
    /// Action → actions it depends on (sorted, unique).
    deps: Vec<Vec<ActionId>>,
    /// Action → actions that depend on it.
    rdeps: Vec<Vec<ActionId>>,
    /// Target → targets it depends on (union of its actions' deps plus declared deps, no self).
    tdeps: Vec<Vec<u32>>,
    /// Target → targets depending on it.
    trdeps: Vec<Vec<u32>>,
}

fn to_u32(v: usize) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

impl Graph {
    /// An edgeless graph whose target `t` has `cap_counts[t]` actions.
    pub fn new(cap_counts: &[usize]) -> Self {
        let mut base = Vec::with_capacity(cap_counts.len() + 1);
        let mut action_target = Vec::new();
        let mut n = 0usize;
        for (t, c) in cap_counts.iter().enumerate() {
            base.push(to_u32(n));
            n += c;
            action_target.extend(std::iter::repeat_n(to_u32(t), *c));
        }
        base.push(to_u32(n));
        Graph {
            base,
            action_target,
            deps: vec![Vec::new(); n],
            rdeps: Vec::new(),
            tdeps: vec![Vec::new(); cap_counts.len()],
            trdeps: Vec::new(),
        }
    }

    /// Number of actions.
    pub fn action_count(&self) -> usize {
        self.action_target.len()
    }

    /// Number of action edges.
    pub fn edge_count(&self) -> usize {
        self.deps.iter().map(Vec::len).sum()
    }

    /// The action of capability number `cap` of target `target`.
    pub fn action(&self, target: usize, cap: usize) -> ActionId {
        self.base
            .get(target)
            .copied()
            .unwrap_or(0)
            .saturating_add(to_u32(cap))
    }

    /// `(target, capability index)` of an action.
    pub fn split(&self, a: ActionId) -> (usize, usize) {
        let t = self.action_target.get(a as usize).copied().unwrap_or(0);
        let b = self.base.get(t as usize).copied().unwrap_or(0);
        (t as usize, (a - b.min(a)) as usize)
    }

    /// Records that action `from` depends on action `to` (also links their targets).
    pub fn add_edge(&mut self, from: ActionId, to: ActionId) {
        if let Some(v) = self.deps.get_mut(from as usize) {
            v.push(to);
        }
        let (tf, _) = self.split(from);
        let (tt, _) = self.split(to);
        self.add_target_edge(tf, tt);
    }

    /// Records that target `from` depends on target `to` (self-links are ignored).
    pub fn add_target_edge(&mut self, from: usize, to: usize) {
        if from != to
            && let Some(v) = self.tdeps.get_mut(from)
        {
            v.push(to_u32(to));
        }
    }

    /// Sorts and dedups adjacency and builds the reverse adjacency.
    pub fn finish(&mut self) {
        for v in self.deps.iter_mut().chain(self.tdeps.iter_mut()) {
            v.sort_unstable();
            v.dedup();
        }
        self.rdeps = reverse(&self.deps);
        self.trdeps = reverse(&self.tdeps);
    }

    /// Direct action deps of `a`.
    pub fn action_deps(&self, a: ActionId) -> &[ActionId] {
        self.deps.get(a as usize).map_or(&[], Vec::as_slice)
    }
    /// Action adjacency (deps).
    pub fn action_adjacency(&self) -> &[Vec<ActionId>] {
        &self.deps
    }
    /// Reverse action adjacency (dependents).
    pub fn action_reverse(&self) -> &[Vec<ActionId>] {
        &self.rdeps
    }
    /// Target adjacency (deps).
    pub fn target_adjacency(&self) -> &[Vec<u32>] {
        &self.tdeps
    }
    /// Reverse target adjacency (dependents).
    pub fn target_reverse(&self) -> &[Vec<u32>] {
        &self.trdeps
    }

    /// One cycle per strongly connected component that has one, each as the
    /// list of actions `a → b → … → a` (first repeated at the end), starting at
    /// the smallest action of the component. Iterative Tarjan.
    pub fn cycles(&self) -> Vec<Vec<ActionId>> {
        let n = self.deps.len();
        const UNSEEN: u32 = u32::MAX;
        let mut index = vec![UNSEEN; n];
        let mut low = vec![0u32; n];
        let mut on_stack = vec![false; n];
        let mut stack: Vec<u32> = Vec::new();
        let mut next = 0u32;
        let mut comp_of = vec![UNSEEN; n];
        // Only components that can hold a cycle are kept; singletons are the common case.
        let mut comps: Vec<Vec<u32>> = Vec::new();
        let mut comp: Vec<u32> = Vec::new();
        let mut work: Vec<(u32, usize)> = Vec::new();
        for root in 0..n {
            if index[root] != UNSEEN {
                continue;
            }
            work.push((to_u32(root), 0));
            while let Some(&mut (v, ref mut i)) = work.last_mut() {
                let vu = v as usize;
                if *i == 0 && index[vu] == UNSEEN {
                    index[vu] = next;
                    low[vu] = next;
                    next += 1;
                    stack.push(v);
                    on_stack[vu] = true;
                }
                if let Some(&w) = self.deps[vu].get(*i) {
                    *i += 1;
                    let wu = w as usize;
                    if index[wu] == UNSEEN {
                        work.push((w, 0));
                    } else if on_stack[wu] {
                        low[vu] = low[vu].min(index[wu]);
                    }
                    continue;
                }
                work.pop();
                if let Some(&(p, _)) = work.last() {
                    low[p as usize] = low[p as usize].min(low[vu]);
                }
                if low[vu] == index[vu] {
                    comp.clear();
                    while let Some(w) = stack.pop() {
                        on_stack[w as usize] = false;
                        comp.push(w);
                        if w == v {
                            break;
                        }
                    }
                    if comp.len() > 1 || self.deps[vu].contains(&v) {
                        for &w in &comp {
                            comp_of[w as usize] = to_u32(comps.len());
                        }
                        comps.push(comp.clone());
                    }
                }
            }
        }
        let mut out = Vec::new();
        for (ci, comp) in comps.iter().enumerate() {
            let Some(&start) = comp.iter().min() else {
                continue;
            };
            let self_loop = self.deps[start as usize].contains(&start);
            if comp.len() < 2 && !self_loop {
                continue;
            }
            if self_loop {
                out.push(vec![start, start]);
                continue;
            }
            // Shortest way back to `start` inside the component (BFS).
            let mut prev: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
            let mut queue = VecDeque::from([start]);
            let mut last = None;
            'bfs: while let Some(v) = queue.pop_front() {
                for &w in &self.deps[v as usize] {
                    if comp_of[w as usize] != to_u32(ci) {
                        continue;
                    }
                    if w == start {
                        last = Some(v);
                        break 'bfs;
                    }
                    if let std::collections::hash_map::Entry::Vacant(e) = prev.entry(w) {
                        e.insert(v);
                        queue.push_back(w);
                    }
                }
            }
            let Some(mut cur) = last else { continue };
            let mut cycle = vec![start, cur];
            while cur != start {
                match prev.get(&cur) {
                    Some(&p) => {
                        cycle.push(p);
                        cur = p;
                    }
                    None => break,
                }
            }
            cycle.reverse();
            out.push(cycle);
        }
        out.sort();
        out
    }

    /// Topological waves of everything `roots` needs (deps first): wave 0 has
    /// no deps, each later wave depends only on earlier ones. `Err` holds the
    /// actions left on a cycle.
    pub fn waves(&self, roots: &[ActionId]) -> Result<Vec<Vec<ActionId>>, Vec<ActionId>> {
        let n = self.deps.len();
        let mut seen = vec![false; n];
        let mut nodes = Vec::new();
        let mut stack: Vec<u32> = roots
            .iter()
            .copied()
            .filter(|r| (*r as usize) < n)
            .collect();
        while let Some(v) = stack.pop() {
            if std::mem::replace(&mut seen[v as usize], true) {
                continue;
            }
            nodes.push(v);
            stack.extend(self.deps[v as usize].iter().copied());
        }
        let mut pending: std::collections::HashMap<u32, usize> = nodes
            .iter()
            .map(|&v| (v, self.deps[v as usize].len()))
            .collect();
        let mut wave: Vec<u32> = nodes
            .iter()
            .copied()
            .filter(|v| self.deps[*v as usize].is_empty())
            .collect();
        let mut out = Vec::new();
        let mut done = 0;
        while !wave.is_empty() {
            wave.sort_unstable();
            done += wave.len();
            let mut next = Vec::new();
            for &v in &wave {
                for &d in &self.rdeps[v as usize] {
                    if let Some(c) = pending.get_mut(&d) {
                        *c -= 1;
                        if *c == 0 {
                            next.push(d);
                        }
                    }
                }
            }
            out.push(std::mem::replace(&mut wave, next));
        }
        if done < nodes.len() {
            let mut left: Vec<u32> = pending
                .into_iter()
                .filter(|(_, c)| *c > 0)
                .map(|(v, _)| v)
                .collect();
            left.sort_unstable();
            return Err(left);
        }
        Ok(out)
    }
}

impl crate::Workspace {
    /// The action graph. Its target indices are positions in
    /// [`Workspace::targets`](crate::Workspace::targets), its capability indices
    /// positions in each target's `capabilities`; a runner plans with it.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }
}

/// The reverse of an adjacency list: for each node, the nodes with an edge to it.
pub(crate) fn reverse(adj: &[Vec<u32>]) -> Vec<Vec<u32>> {
    let mut r = vec![Vec::new(); adj.len()];
    for (from, tos) in adj.iter().enumerate() {
        for &to in tos {
            if let Some(v) = r.get_mut(to as usize) {
                v.push(to_u32(from));
            }
        }
    }
    r
}

/// Nodes reachable from `start` over `adj` with their BFS depth (1 = direct),
/// excluding `start`; only depth 1 unless `transitive`.
pub fn reach(adj: &[Vec<u32>], start: u32, transitive: bool) -> Vec<(u32, u32)> {
    let mut seen = vec![false; adj.len()];
    if let Some(s) = seen.get_mut(start as usize) {
        *s = true;
    }
    // `out` doubles as the BFS queue: entries are appended in depth order.
    let mut out: Vec<(u32, u32)> = Vec::new();
    let mut head = 0;
    let mut frontier = Some((start, 0u32));
    while let Some((v, d)) = frontier {
        if d == 0 || transitive {
            for &w in adj.get(v as usize).map_or(&[][..], Vec::as_slice) {
                if let Some(s) = seen.get_mut(w as usize)
                    && !*s
                {
                    *s = true;
                    out.push((w, d + 1));
                }
            }
        }
        frontier = out.get(head).copied();
        head += 1;
    }
    out
}

/// Shortest path `from → … → to` over `adj` (BFS), inclusive of both ends.
pub fn shortest_path(adj: &[Vec<u32>], from: u32, to: u32) -> Option<Vec<u32>> {
    if from == to {
        return Some(vec![from]);
    }
    let mut prev: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
    let mut queue = VecDeque::from([from]);
    while let Some(v) = queue.pop_front() {
        for &w in adj.get(v as usize).map_or(&[][..], Vec::as_slice) {
            if w == from || prev.contains_key(&w) {
                continue;
            }
            prev.insert(w, v);
            if w == to {
                let mut path = vec![to];
                let mut cur = to;
                while let Some(&p) = prev.get(&cur) {
                    path.push(p);
                    if p == from {
                        break;
                    }
                    cur = p;
                }
                path.reverse();
                return Some(path);
            }
            queue.push_back(w);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three targets with one action each.
    fn g(edges: &[(u32, u32)]) -> Graph {
        let mut g = Graph::new(&[1, 1, 1, 1]);
        for &(a, b) in edges {
            g.add_edge(a, b);
        }
        g.finish();
        g
    }

    #[test]
    fn finds_cycles() {
        assert!(g(&[(0, 1), (1, 2)]).cycles().is_empty());
        assert_eq!(
            g(&[(0, 1), (1, 2), (2, 0)]).cycles(),
            vec![vec![0, 1, 2, 0]]
        );
        assert_eq!(g(&[(3, 3)]).cycles(), vec![vec![3, 3]]);
        assert_eq!(
            g(&[(0, 1), (1, 0), (2, 3), (3, 2)]).cycles(),
            vec![vec![0, 1, 0], vec![2, 3, 2]]
        );
    }

    #[test]
    fn waves_and_paths() {
        let gr = g(&[(0, 1), (0, 2), (1, 3), (2, 3)]);
        assert_eq!(gr.waves(&[0]), Ok(vec![vec![3], vec![1, 2], vec![0]]));
        assert_eq!(gr.waves(&[1]), Ok(vec![vec![3], vec![1]]));
        assert_eq!(g(&[(0, 1), (1, 0)]).waves(&[0]), Err(vec![0, 1]));
        assert_eq!(
            shortest_path(gr.action_adjacency(), 0, 3).map(|p| p.len()),
            Some(3)
        );
        assert_eq!(shortest_path(gr.action_adjacency(), 3, 0), None);
        assert_eq!(reach(gr.target_adjacency(), 0, false), vec![(1, 1), (2, 1)]);
        assert_eq!(
            reach(gr.target_adjacency(), 0, true),
            vec![(1, 1), (2, 1), (3, 2)]
        );
        assert_eq!(
            reach(gr.target_reverse(), 3, true),
            vec![(1, 1), (2, 1), (0, 2)]
        );
    }
}
