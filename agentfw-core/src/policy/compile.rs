//! Compiling rules: CEL programs built once at load, checked against what a rule can read
//! and call, with every regex compiled up front.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use cel::common::ast::{Expr, LiteralValue};
use cel::common::types::CelString;
use cel::common::value::CowVal;
use cel::{Context, Env, ExecutionError, FunctionContext, IdedExpr, Program};
use regex::{Regex, RegexBuilder};

use super::context::Memo;
use super::context::{AGENT_FIELDS, MESSAGE_FIELDS, SIGNAL_FIELDS, THREAD_FIELDS};
use super::diagnostic::{Diagnostic, Diagnostics, SourceFile, Span};
use super::patterns::{PatternLibrary, Placeholders, Union, regex_diagnostic};
use super::rule::{self, Draft, RuleInfo};
use super::yaml::{self, Node, NodeKind};
use super::{PolicyError, RuleSet, Sources};

/// Functions of the CEL standard library a rule may call.
const STD_FUNCTIONS: &[&str] = &[
    "size",
    "contains",
    "startsWith",
    "endsWith",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "type",
    "dyn",
    "duration",
    "timestamp",
    "getFullYear",
    "getMonth",
    "getDayOfYear",
    "getDayOfMonth",
    "getDate",
    "getDayOfWeek",
    "getHours",
    "getMinutes",
    "getSeconds",
    "getMilliseconds",
    "max",
    "min",
];

/// Functions agentfw adds: `text.matches(regex)` and `text.matches_set(name)`.
const OUR_FUNCTIONS: &[&str] = &["matches", "matches_set"];

/// A regex written in a rule is capped like pattern-file regexes.
const REGEX_SIZE_LIMIT: usize = 4 << 20;

/// Which text a `matches_set` call tested, so a refusal can name the pattern that matched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Subject {
    Body,
    Folded,
    /// Any other expression: the pattern is then not named.
    Other,
}

/// One compiled rule.
#[derive(Debug)]
pub(crate) struct CompiledRule {
    pub info: RuleInfo,
    pub program: Program,
    /// The pattern sets the rule tests, in the order written.
    pub sets: Vec<(Subject, String)>,
}

/// Regexes written in rules, compiled once, looked up by their source text.
pub(crate) type RegexCache = HashMap<String, Regex>;

pub(crate) fn compile(sources: &Sources) -> Result<RuleSet, PolicyError> {
    let mut diags = Vec::new();
    let placeholders = Arc::new(Placeholders::compile(&sources.placeholders, &mut diags));
    let library = PatternLibrary::compile(&sources.patterns, placeholders, &mut diags);
    let env = Arc::new(Env::stdlib());
    let mut regexes = RegexCache::new();
    let mut rules = Vec::new();
    let mut ids: BTreeMap<String, ()> = BTreeMap::new();
    for file in &sources.rules {
        for draft in rule::read(file, &mut diags) {
            if ids.insert(draft.info.id.clone(), ()).is_some() {
                diags.push(
                    Diagnostic::at(
                        "policy.duplicate_id",
                        format!("rule id `{}` is used twice", draft.info.id),
                        draft.file,
                        draft.id_node.span,
                    )
                    .with_hint("every rule needs its own id: refusals name it"),
                );
                continue;
            }
            if let Some(rule) = compile_rule(&env, draft, &library, &mut regexes, &mut diags) {
                rules.push(rule);
            }
        }
    }
    if !diags.is_empty() {
        return Err(PolicyError::Invalid(Diagnostics(diags)));
    }
    Ok(RuleSet::assemble(rules, Arc::new(library), Arc::new(regexes), env))
}

/// Maps offsets in a rule's `when` text back to characters of its file.
struct Locator<'a> {
    file: &'a SourceFile,
    text: &'a str,
    positions: Vec<usize>,
}

impl<'a> Locator<'a> {
    fn new(file: &'a SourceFile, node: &Node, text: &'a str) -> Self {
        Self { file, text, positions: yaml::char_positions(file, node, text) }
    }

    /// The file span of `when` bytes `start..end`.
    fn bytes(&self, start: usize, end: usize) -> Span {
        let char_at = |b: usize| self.text.get(..b.min(self.text.len())).map_or(0, |s| s.chars().count());
        let (from, to) = (char_at(start), char_at(end).max(char_at(start) + 1));
        let first = self.positions.get(from).copied().unwrap_or(0);
        let last = self.positions.get(to.saturating_sub(1)).map_or(first, |p| p + 1);
        Span::new(first, last.max(first + 1))
    }

    /// The file span of a node, `width` bytes from its recorded offset.
    fn node(&self, program: &Program, id: u64, width: usize) -> Span {
        match program.source_info().offset_for(id) {
            Some((start, _)) => {
                let start = start as usize;
                self.bytes(start, start + width.max(1))
            }
            None => self.whole(),
        }
    }

    fn node_range(&self, program: &Program, id: u64) -> Span {
        match program.source_info().offset_for(id) {
            Some((start, stop)) => self.bytes(start as usize, stop as usize + 1),
            None => self.whole(),
        }
    }

    /// The file span of 1-based `line` and `col` (in characters) of the `when` text.
    fn line_col(&self, line: isize, col: isize) -> Span {
        let line = usize::try_from(line.max(1)).unwrap_or(1);
        let col = usize::try_from(col.max(1)).unwrap_or(1);
        let mut char_index = 0;
        for (n, l) in self.text.split_inclusive('\n').enumerate() {
            if n + 1 == line {
                char_index += (col - 1).min(l.chars().count());
                break;
            }
            char_index += l.chars().count();
        }
        let at = self.positions.get(char_index).copied().or_else(|| self.positions.last().copied()).unwrap_or(0);
        Span::new(at, at + 1)
    }

    fn whole(&self) -> Span {
        let first = self.positions.first().copied().unwrap_or(0);
        let last = self.positions.last().copied().unwrap_or(first);
        Span::new(first, last)
    }

    fn error(&self, code: &'static str, message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic::at(code, message, self.file, span)
    }
}

fn compile_rule(
    env: &Env,
    draft: Draft<'_>,
    library: &PatternLibrary,
    regexes: &mut RegexCache,
    diags: &mut Vec<Diagnostic>,
) -> Option<CompiledRule> {
    let locator = Locator::new(draft.file, &draft.when_node, &draft.info.when);
    let program = match env.compile(&draft.info.when) {
        Ok(p) => p,
        Err(errors) => {
            for e in errors.errors.iter().take(3) {
                let msg = syntax_message(&e.msg);
                diags.push(
                    locator
                        .error(
                            "policy.syntax",
                            format!("the condition does not parse: {msg}"),
                            locator.line_col(e.pos.0, e.pos.1),
                        )
                        .with_hint(
                            "`when` is a CEL expression, e.g. `message.hops >= 2 && message.body.contains('curl')`",
                        ),
                );
            }
            return None;
        }
    };
    let before = diags.len();
    let mut check =
        Checker { program: &program, locator: &locator, library, regexes, diags, scopes: Vec::new(), sets: Vec::new() };
    check.expr(program.expression());
    let sets = std::mem::take(&mut check.sets);
    if diags.len() > before {
        return None;
    }
    Some(CompiledRule { info: draft.info, program, sets })
}

/// Walks a rule's expression and reports what a rule may not do: read an unknown
/// variable or field, call an unknown function, use a regex that does not compile, or
/// name a pattern set that does not exist.
struct Checker<'a> {
    program: &'a Program,
    locator: &'a Locator<'a>,
    library: &'a PatternLibrary,
    regexes: &'a mut RegexCache,
    diags: &'a mut Vec<Diagnostic>,
    /// Variables bound by comprehensions (`all`, `exists`, `map`, …) around this point.
    scopes: Vec<BTreeSet<String>>,
    sets: Vec<(Subject, String)>,
}

impl Checker<'_> {
    fn bound(&self, name: &str) -> bool {
        self.scopes.iter().any(|s| s.contains(name))
    }

    fn expr(&mut self, e: &IdedExpr) {
        match &e.expr {
            Expr::Ident(name) => self.ident(e, name),
            Expr::Select(select) => {
                if let Some(segments) = field_path(e)
                    && segments.first().is_some_and(|r| !self.bound(r))
                {
                    self.path(e, &segments);
                    return;
                }
                self.expr(&select.operand);
            }
            Expr::Call(call) => {
                self.function(e, &call.func_name);
                if let Some(target) = &call.target {
                    self.expr(target);
                }
                for arg in &call.args {
                    self.expr(arg);
                }
                self.call_arguments(e, call);
            }
            Expr::Comprehension(c) => {
                self.expr(&c.iter_range);
                self.expr(&c.accu_init);
                let mut scope = BTreeSet::from([c.iter_var.clone(), c.accu_var.clone()]);
                if let Some(v) = &c.iter_var2 {
                    scope.insert(v.clone());
                }
                self.scopes.push(scope);
                self.expr(&c.loop_cond);
                self.expr(&c.loop_step);
                self.expr(&c.result);
                self.scopes.pop();
            }
            Expr::List(list) => list.elements.iter().for_each(|x| self.expr(x)),
            Expr::Map(map) => {
                for entry in &map.entries {
                    if let cel::common::ast::EntryExpr::MapEntry(m) = &entry.expr {
                        self.expr(&m.key);
                        self.expr(&m.value);
                    }
                }
            }
            Expr::Struct(_) => self.diags.push(
                self.locator
                    .error(
                        "policy.unsupported",
                        "rules cannot build messages or structs",
                        self.locator.node_range(self.program, e.id),
                    )
                    .with_hint("use lists `[...]` and maps `{...}` instead"),
            ),
            Expr::Literal(_) | Expr::Unspecified => {}
        }
    }

    fn ident(&mut self, e: &IdedExpr, name: &str) {
        if self.bound(name) || name.starts_with('@') || matches!(name, "message" | "now") {
            return;
        }
        let mut d = self.locator.error(
            "policy.unknown_variable",
            format!("`{name}` is not something a rule can read"),
            self.locator.node(self.program, e.id, name.len()),
        );
        d = match yaml::closest(name, &["message", "now"]) {
            Some(near) => d.with_hint(format!("did you mean `{near}`?")),
            None => d.with_hint(
                "rules read `message` (its body, hops, origin, path, from, to, size, thread, signals) and `now`",
            ),
        };
        self.diags.push(d);
    }

    /// Checks `message.a.b` against the fields a message has.
    fn path(&mut self, e: &IdedExpr, segments: &[&str]) {
        let Some((&root, fields)) = segments.split_first() else {
            return;
        };
        if root != "message" {
            if root == "now" && !fields.is_empty() {
                self.unknown_field(e, segments, fields.len(), &[], "`now` is a timestamp and has no fields");
            } else if root != "now"
                && let Some(root_expr) = root_of(e)
            {
                self.ident(root_expr, root);
            }
            return;
        }
        let names: Vec<&str> = MESSAGE_FIELDS.iter().map(|(n, _)| *n).collect();
        let Some((&first, rest)) = fields.split_first() else {
            return;
        };
        if !names.contains(&first) {
            self.unknown_field(e, segments, 1, &names, "");
            return;
        }
        let (children, kind): (&[&str], &str) = match first {
            "from" | "to" => (AGENT_FIELDS, "an agent"),
            "thread" => (THREAD_FIELDS, "a thread"),
            "signals" => (SIGNAL_FIELDS, "signals"),
            "path" => (&[], "a list of labels"),
            "hops" | "size" => (&[], "a number"),
            _ => (&[], "a string"),
        };
        let Some(&second) = rest.first() else {
            return;
        };
        if !children.contains(&second) || rest.len() > 1 {
            let depth = if children.contains(&second) { 3 } else { 2 };
            let note = if children.is_empty() {
                format!("`message.{first}` is {kind} and has no fields")
            } else if children.contains(&second) {
                let child = if first == "signals" || second == "turns" { "a number" } else { "a string" };
                format!("`message.{first}.{second}` is {child} and has no fields")
            } else {
                String::new()
            };
            self.unknown_field(e, segments, depth, children, &note);
        }
    }

    fn unknown_field(&mut self, e: &IdedExpr, segments: &[&str], depth: usize, known: &[&str], note: &str) {
        let shown: Vec<&str> = segments.iter().take(depth + 1).copied().collect();
        let name = shown.join(".");
        let bad = shown.last().copied().unwrap_or_default();
        let start = root_of(e).and_then(|r| self.program.source_info().offset_for(r.id)).map_or(0, |(s, _)| s as usize);
        let span = self.locator.bytes(start, start + name.len());
        let mut d =
            self.locator.error("policy.unknown_variable", format!("`{name}` is not something a rule can read"), span);
        let parent = shown.get(..shown.len().saturating_sub(1)).map(|p| p.join(".")).unwrap_or_default();
        d = if !note.is_empty() {
            d.with_hint(note.to_owned())
        } else if let Some(near) = yaml::closest(bad, known) {
            d.with_hint(format!("did you mean `{parent}.{near}`?"))
        } else {
            d.with_hint(format!("`{parent}` has {}", yaml::list(known)))
        };
        self.diags.push(d);
    }

    fn function(&mut self, e: &IdedExpr, name: &str) {
        let operator = name.starts_with(['_', '!', '@']) || name == "-_";
        if operator || STD_FUNCTIONS.contains(&name) || OUR_FUNCTIONS.contains(&name) {
            return;
        }
        let start = self.program.source_info().offset_for(e.id).map_or(0, |(s, _)| s as usize);
        let span = self.locator.bytes(start.saturating_sub(name.len()), start);
        let mut all: Vec<&str> = STD_FUNCTIONS.to_vec();
        all.extend_from_slice(OUR_FUNCTIONS);
        let mut d = self.locator.error("policy.unknown_function", format!("there is no function `{name}`"), span);
        d = match yaml::closest(name, &all) {
            Some(near) => d.with_hint(format!("did you mean `{near}`?")),
            None => d.with_hint("rules can call the CEL standard functions, `matches(regex)` and `matches_set(name)`"),
        };
        self.diags.push(d);
    }

    /// `matches` needs a literal regex (compiled now, never per message); `matches_set`
    /// needs the name of a loaded pattern set.
    fn call_arguments(&mut self, e: &IdedExpr, call: &cel::common::ast::CallExpr) {
        let (subject, arg) = match (call.func_name.as_str(), &call.target, call.args.as_slice()) {
            ("matches" | "matches_set", Some(target), [arg]) => (Some(&**target), arg),
            ("matches" | "matches_set", None, [text, arg]) => (Some(text), arg),
            ("matches" | "matches_set", _, _) => {
                self.diags.push(
                    self.locator
                        .error(
                            "policy.arguments",
                            format!("`{}` takes one argument", call.func_name),
                            self.locator.node_range(self.program, e.id),
                        )
                        .with_hint(format!("write `message.body.{}('...')`", call.func_name)),
                );
                return;
            }
            _ => return,
        };
        let literal = match &arg.expr {
            Expr::Literal(LiteralValue::String(s)) => Some(s.inner().to_owned()),
            _ => None,
        };
        let span = self.locator.node_range(self.program, arg.id);
        let Some(literal) = literal else {
            self.diags.push(
                self.locator
                    .error(
                        "policy.dynamic_pattern",
                        format!("the argument of `{}` must be a string literal", call.func_name),
                        span,
                    )
                    .with_hint("patterns are compiled once when rules load, so they cannot be computed per message"),
            );
            return;
        };
        if call.func_name == "matches" {
            if self.regexes.contains_key(&literal) {
                return;
            }
            match RegexBuilder::new(&literal).size_limit(REGEX_SIZE_LIMIT).build() {
                Ok(re) => {
                    self.regexes.insert(literal, re);
                }
                Err(err) => {
                    let node = Node { kind: NodeKind::Scalar { value: String::new(), quoted: true }, span };
                    let mut d = regex_diagnostic(&err, &literal, &node, self.locator.file);
                    d.code = "policy.invalid_regex";
                    self.diags.push(d);
                }
            }
            return;
        }
        if self.library.get(&literal).is_none() {
            let names: Vec<&str> = self.library.names().collect();
            let mut d =
                self.locator.error("policy.unknown_pattern_set", format!("there is no pattern set `{literal}`"), span);
            d = match yaml::closest(&literal, &names) {
                Some(near) => d.with_hint(format!("did you mean `{near}`?")),
                None if names.is_empty() => d.with_hint("no pattern files are loaded"),
                None => d.with_hint(format!("the loaded sets are {}", yaml::list(&names))),
            };
            self.diags.push(d);
            return;
        }
        let subject = match subject.and_then(field_path).as_deref() {
            Some(["message", "body"]) => Subject::Body,
            Some(["message", "folded"]) => Subject::Folded,
            _ => Subject::Other,
        };
        self.sets.push((subject, literal));
    }
}

/// The parser's message in plain words: `mismatched input ')' expecting {...}` becomes
/// "unexpected `)`", and the end of the text is called that.
fn syntax_message(raw: &str) -> String {
    let msg = raw.strip_prefix("Syntax error: ").unwrap_or(raw);
    if let Some(rest) = msg.strip_prefix("mismatched input ").or_else(|| msg.strip_prefix("extraneous input ")) {
        let token = rest.split(" expecting").next().unwrap_or(rest).trim_matches('\'');
        return match token {
            "<EOF>" => "the condition ends too early".to_owned(),
            t => format!("unexpected `{t}`"),
        };
    }
    if let Some(rest) = msg.strip_prefix("token recognition error at: ") {
        return format!("unexpected `{}`", rest.trim_matches('\'').trim());
    }
    msg.replace("'<EOF>'", "the end").replace('\'', "`")
}

/// `a.b.c` as `["a", "b", "c"]`, if `e` is a chain of field selections on an identifier.
fn field_path(e: &IdedExpr) -> Option<Vec<&str>> {
    let mut segments = Vec::new();
    let mut at = e;
    loop {
        match &at.expr {
            Expr::Ident(name) => {
                segments.push(name.as_str());
                segments.reverse();
                return Some(segments);
            }
            Expr::Select(s) => {
                segments.push(s.field.as_str());
                at = &s.operand;
            }
            _ => return None,
        }
    }
}

fn root_of(e: &IdedExpr) -> Option<&IdedExpr> {
    let mut at = e;
    loop {
        match &at.expr {
            Expr::Ident(_) => return Some(at),
            Expr::Select(s) => at = &s.operand,
            _ => return None,
        }
    }
}

fn text_of<'x>(v: &'x CowVal<'_, '_>) -> Option<&'x str> {
    v.downcast_ref::<CelString>().map(|s| s.inner())
}

/// The `(text, argument)` of a `text.f(arg)` or `f(text, arg)` call.
fn text_and_argument<'x>(ftx: &'x FunctionContext<'_, '_>) -> Result<(&'x str, &'x str), ExecutionError> {
    let (text, arg) = match (&ftx.this, ftx.args.as_slice()) {
        (Some(this), [arg]) => (this, arg),
        (None, [text, arg]) => (text, arg),
        _ => return Err(ftx.error("expects a string and one argument")),
    };
    let text = text_of(text).ok_or_else(|| ftx.error("can only test a string"))?;
    let arg = text_of(arg).ok_or_else(|| ftx.error("takes a string argument"))?;
    Ok((text, arg))
}

/// What the shared scan of `text`'s union says about set `name`: `None` when `text` is
/// not the body or the folded text, or no union holds the set.
pub(crate) fn union_lookup(
    unions: &[Option<Union>; 2],
    library: &PatternLibrary,
    memo: &Memo,
    text: &str,
    name: &str,
) -> Option<Option<usize>> {
    let subject = memo.subject(text)?;
    let union = unions.get(subject)?.as_ref()?;
    let slot = union.slot(name)?;
    let hits = memo.hits(subject, || union.scan(text))?;
    Some(union.found(hits, slot, library, text))
}

/// The evaluation context every message's scope hangs off: the standard library plus
/// `matches` and `matches_set`, both backed by patterns compiled at load.
pub(crate) fn root_context(
    env: Arc<Env>,
    library: Arc<PatternLibrary>,
    regexes: Arc<RegexCache>,
    unions: Arc<[Option<Union>; 2]>,
) -> Context<'static, 'static> {
    let mut root = Context::with_env(env);
    let matches = move |ftx: &FunctionContext| -> Result<bool, ExecutionError> {
        let (text, pattern) = text_and_argument(ftx)?;
        let re =
            regexes.get(pattern).ok_or_else(|| ftx.error(format!("the regex `{pattern}` was not compiled at load")))?;
        Ok(re.is_match(text))
    };
    let matches_set = move |ftx: &FunctionContext| -> Result<bool, ExecutionError> {
        let (text, name) = text_and_argument(ftx)?;
        // The body or the folded text: answer from the shared scan of its union.
        if let Some(memo) = ftx.ptx.get_variable("@memo")
            && let Some(memo) = memo.downcast_ref::<Memo>()
            && let Some(found) = union_lookup(&unions, &library, memo, text, name)
        {
            return Ok(found.is_some());
        }
        let set = library.get(name).ok_or_else(|| ftx.error(format!("there is no pattern set `{name}`")))?;
        Ok(set.find(text).is_some())
    };
    // Neither name is declared by the standard library without its `regex` feature, so
    // these cannot conflict. Were one ever left undefined, every rule calling it would fail
    // to evaluate, and so fail closed.
    let _ = root.add_function("matches", matches);
    let _ = root.add_function("matches_set", matches_set);
    root
}
