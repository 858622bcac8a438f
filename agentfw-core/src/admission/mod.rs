//! Admission: whether an agent may talk on the network at all (AD1–AD8).
//!
//! The gate judges the agent, not the message. Its input is an [`Inventory`]: for each
//! agent, the components it loaded (`mcp:<name>`, `skill:<name>`), each with a risk score
//! from 0 to 10. agentfw does not compute ratings: it reads them in the spec's JSON format
//! ([`Inventory::from_json`]), imports them from a scanner's report
//! ([`import_cisco_mcp_scanner`]), and lists what each harness is configured to load
//! ([`configured_servers`]).
//!
//! The rules, in the order they apply:
//!
//! - The worst component decides, never an average (AD2). A component is over the threshold
//!   when its score is at or above it (default 7.0, the bottom of HIGH).
//! - A refusal names the component: `your agent is not admitted to the network: mcp:github
//!   is HIGH (7.5)` (AD3); the firewall prefixes `refused: `.
//! - Exceptions are per component; an excused component does not count, and the threshold
//!   stays where it is (AD4).
//! - Unknown means no (AD5): an agent no inventory lists, or a component nobody rated, is
//!   refused. A session's first contact while unknown asks the adapter for one refresh
//!   ([`GateCheck::refresh`]); after that the refusal says to retry in a few seconds.
//! - In [`Mode::Report`] everyone is admitted, and what enforcement would refuse comes back
//!   as a `would refuse: …` warning (AD6).
//! - [`Admission::preview`] tells how many agents another threshold would keep out (AD7).
//!
//! Levels follow the usual severity bands: LOW < 4.0 ≤ MEDIUM < 7.0 ≤ HIGH < 9.0 ≤ CRITICAL.
//! Scores are kept in hundredths, so comparisons with the threshold are exact.

use core::fmt;
use core::str::FromStr;
use core::time::Duration;
use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::code::ReasonCode;
use crate::message::{Agent, AgentId};
use crate::time::Timestamp;

mod harness;
mod import;

pub use harness::{HarnessFile, configured_servers};
pub use import::{ImportedReport, import_cisco_mcp_scanner};

/// Why admission input is not usable. Bad input never admits anyone: it is an error.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AdmissionError {
    #[error("admission inventory: {0}")]
    Inventory(String),
    #[error("`{0}` is not a risk score: scores run from 0 to 10")]
    Score(String),
    #[error("`{0}` is not a threshold: give a score from 0 to 10 or a level (LOW, MEDIUM, HIGH, CRITICAL)")]
    Threshold(String),
    #[error("`{0}` is not a risk level: use LOW, MEDIUM, HIGH or CRITICAL")]
    Level(String),
    #[error("`{0}` is not an admission mode: use `off`, `report` or `enforce`")]
    Mode(String),
    #[error("`{id}` is not a component id: {problem}")]
    ComponentId { id: String, problem: &'static str },
    #[error("{file}: {problem}")]
    HarnessConfig { file: HarnessFile, problem: String },
    #[error("mcp-scanner report: {0}")]
    ScannerReport(String),
}

impl AdmissionError {
    /// A stable code for bindings and logs, e.g. `admission.inventory`.
    pub fn code(&self) -> &'static str {
        match self {
            AdmissionError::Inventory(_) => "admission.inventory",
            AdmissionError::Score(_) => "admission.score",
            AdmissionError::Threshold(_) => "admission.threshold",
            AdmissionError::Level(_) => "admission.level",
            AdmissionError::Mode(_) => "admission.mode",
            AdmissionError::ComponentId { .. } => "admission.component_id",
            AdmissionError::HarnessConfig { .. } => "admission.harness_config",
            AdmissionError::ScannerReport(_) => "admission.scanner_report",
        }
    }
}

/// A risk score from 0 to 10, kept in hundredths so that `score >= threshold` is exact.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Score(u16);

impl Score {
    pub const ZERO: Score = Score(0);
    pub const MAX: Score = Score(1000);
    /// The default threshold: the bottom of HIGH (AD2).
    pub const DEFAULT_THRESHOLD: Score = Score(700);

    /// A score from a number in 0..=10, rounded to hundredths.
    pub fn new(value: f64) -> Result<Self, AdmissionError> {
        if !value.is_finite() || !(0.0..=10.0).contains(&value) {
            return Err(AdmissionError::Score(value.to_string()));
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // in 0..=1000 after the check
        Ok(Score((value * 100.0).round() as u16))
    }

    /// A score from hundredths: `from_hundredths(750)` is 7.5.
    pub const fn from_hundredths(hundredths: u16) -> Option<Self> {
        if hundredths <= 1000 { Some(Score(hundredths)) } else { None }
    }

    pub const fn hundredths(self) -> u16 {
        self.0
    }

    pub fn as_f64(self) -> f64 {
        f64::from(self.0) / 100.0
    }

    /// The severity band this score falls in.
    pub fn level(self) -> Level {
        match self.0 {
            0..400 => Level::Low,
            400..700 => Level::Medium,
            700..900 => Level::High,
            _ => Level::Critical,
        }
    }

    /// A threshold as a person writes it: a score (`7`, `6.5`) or a level (`high`), which
    /// stands for the bottom of its band.
    pub fn parse_threshold(text: &str) -> Result<Self, AdmissionError> {
        let t = text.trim();
        if let Ok(level) = t.parse::<Level>() {
            return Ok(level.floor());
        }
        t.parse().map_err(|_| AdmissionError::Threshold(t.to_owned()))
    }
}

impl fmt::Display for Score {
    /// One decimal when that is exact (`7.5`, `2.0`), otherwise two (`7.25`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (whole, frac) = (self.0 / 100, self.0 % 100);
        if frac % 10 == 0 { write!(f, "{whole}.{}", frac / 10) } else { write!(f, "{whole}.{frac:02}") }
    }
}

impl FromStr for Score {
    type Err = AdmissionError;

    fn from_str(s: &str) -> Result<Self, AdmissionError> {
        let value: f64 = s.trim().parse().map_err(|_| AdmissionError::Score(s.to_owned()))?;
        Score::new(value)
    }
}

impl Serialize for Score {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.as_f64())
    }
}

impl<'de> Deserialize<'de> for Score {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = f64::deserialize(d)?;
        Score::new(value).map_err(serde::de::Error::custom)
    }
}

/// A severity band.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Level {
    Low,
    Medium,
    High,
    Critical,
}

impl Level {
    /// The lowest score in the band.
    pub fn floor(self) -> Score {
        Score(match self {
            Level::Low => 0,
            Level::Medium => 400,
            Level::High => 700,
            Level::Critical => 900,
        })
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Low => "LOW",
            Level::Medium => "MEDIUM",
            Level::High => "HIGH",
            Level::Critical => "CRITICAL",
        })
    }
}

impl FromStr for Level {
    type Err = AdmissionError;

    fn from_str(s: &str) -> Result<Self, AdmissionError> {
        match s.trim().to_ascii_uppercase().as_str() {
            "LOW" => Ok(Level::Low),
            "MEDIUM" => Ok(Level::Medium),
            "HIGH" => Ok(Level::High),
            "CRITICAL" => Ok(Level::Critical),
            _ => Err(AdmissionError::Level(s.to_owned())),
        }
    }
}

/// A loaded component: `mcp:<server>`, `skill:<name>`, or another `<kind>:<name>`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ComponentId(String);

impl ComponentId {
    /// Parse and check `<kind>:<name>`: a lower-case kind, a name without control characters.
    pub fn new(id: impl Into<String>) -> Result<Self, AdmissionError> {
        let id = id.into();
        let err = |problem| AdmissionError::ComponentId { id: id.chars().take(80).collect(), problem };
        let Some((kind, name)) = id.split_once(':') else {
            return Err(err("it has no kind: write `mcp:<server>` or `skill:<name>`"));
        };
        if kind.is_empty()
            || !kind.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
        {
            return Err(err("its kind must be lower-case letters, digits, `-` or `_`, as in `mcp:` or `skill:`"));
        }
        if name.trim().is_empty() {
            return Err(err("its name is empty"));
        }
        if name.chars().any(char::is_control) {
            return Err(err("its name contains control characters"));
        }
        if id.len() > 256 {
            return Err(err("it is longer than 256 bytes"));
        }
        Ok(Self(id))
    }

    /// `mcp:<server>`.
    pub fn mcp(server: &str) -> Result<Self, AdmissionError> {
        Self::new(format!("mcp:{server}"))
    }

    /// `skill:<name>`.
    pub fn skill(name: &str) -> Result<Self, AdmissionError> {
        Self::new(format!("skill:{name}"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `mcp` in `mcp:github`.
    pub fn kind(&self) -> &str {
        self.0.split_once(':').map_or("", |(k, _)| k)
    }

    /// `github` in `mcp:github`.
    pub fn name(&self) -> &str {
        self.0.split_once(':').map_or("", |(_, n)| n)
    }
}

impl fmt::Display for ComponentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for ComponentId {
    type Error = AdmissionError;

    fn try_from(s: String) -> Result<Self, AdmissionError> {
        Self::new(s)
    }
}

impl From<ComponentId> for String {
    fn from(id: ComponentId) -> String {
        id.0
    }
}

/// One component of an agent and its rating; `None` when nobody rated it (which refuses the
/// agent as unknown, AD5).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Component {
    pub id: ComponentId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<Score>,
}

impl Component {
    pub fn rated(id: ComponentId, score: Score) -> Self {
        Self { id, score: Some(score) }
    }

    pub fn unrated(id: ComponentId) -> Self {
        Self { id, score: None }
    }
}

/// Ratings by component, as a scanner report yields them (`None`: the scanner could not
/// rate it).
pub type Ratings = BTreeMap<ComponentId, Option<Score>>;

/// The admission inventory (AD1): per agent, its components and their ratings. An agent is
/// named by its label (`web (claude)`) or by its agent id; the id wins when both are listed.
///
/// Its JSON form is the spec's:
/// `{"agents": [{"agent": "web (claude)", "components": [{"id": "mcp:github", "score": 7.5}]}]}`.
/// A component may give a `level` instead of a score (it stands for the bottom of its band)
/// or both, which must agree. Unknown fields, duplicates and out-of-range values are errors.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "InventoryFile", into = "InventoryFile")]
pub struct Inventory {
    agents: BTreeMap<String, Vec<Component>>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct InventoryFile {
    agents: Vec<AgentFile>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentFile {
    agent: String,
    components: Vec<ComponentFile>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ComponentFile {
    id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    score: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    level: Option<String>,
}

/// A score as written in a file: a number from 0 to 10.
fn score_value(value: &serde_json::Value) -> Result<Score, String> {
    match value {
        serde_json::Value::Number(n) => n.as_f64().map_or_else(
            || Err(format!("`{n}` is not a risk score")),
            |x| Score::new(x).map_err(|_| AdmissionError::Score(n.to_string()).to_string()),
        ),
        serde_json::Value::Null => Err("`score` is null: leave it out for an unrated component".to_owned()),
        other => Err(format!("`score` must be a number from 0 to 10, found `{other}`")),
    }
}

impl TryFrom<InventoryFile> for Inventory {
    type Error = AdmissionError;

    fn try_from(file: InventoryFile) -> Result<Self, AdmissionError> {
        let mut agents = BTreeMap::new();
        for (i, entry) in file.agents.into_iter().enumerate() {
            let at = format!("agent {} (`{}`)", i + 1, entry.agent.chars().take(80).collect::<String>());
            let bad = |problem: String| AdmissionError::Inventory(format!("{at}: {problem}"));
            if entry.agent.trim().is_empty() {
                return Err(bad("the agent's name is empty; give its label, e.g. `web (claude)`, or its id".into()));
            }
            let mut components: Vec<Component> = Vec::with_capacity(entry.components.len());
            for (j, c) in entry.components.into_iter().enumerate() {
                let cat = format!("component {} (`{}`)", j + 1, c.id.chars().take(80).collect::<String>());
                let id = ComponentId::new(c.id).map_err(|e| bad(format!("{cat}: {e}")))?;
                let score = c.score.as_ref().map(score_value).transpose().map_err(|e| bad(format!("{cat}: {e}")))?;
                let level =
                    c.level.as_deref().map(str::parse::<Level>).transpose().map_err(|e| bad(format!("{cat}: {e}")))?;
                let score = match (score, level) {
                    (Some(s), Some(l)) if s.level() != l => {
                        return Err(bad(format!("{cat}: score {s} is {}, not {l}", s.level())));
                    }
                    (Some(s), _) => Some(s),
                    (None, Some(l)) => Some(l.floor()),
                    (None, None) => None,
                };
                if components.iter().any(|k| k.id == id) {
                    return Err(bad(format!("{cat}: `{id}` is listed twice")));
                }
                components.push(Component { id, score });
            }
            if agents.insert(entry.agent, components).is_some() {
                return Err(bad("this agent is listed twice".into()));
            }
        }
        Ok(Self { agents })
    }
}

impl From<Inventory> for InventoryFile {
    fn from(inv: Inventory) -> Self {
        let agents = inv
            .agents
            .into_iter()
            .map(|(agent, components)| AgentFile {
                agent,
                components: components
                    .into_iter()
                    .map(|c| ComponentFile { id: c.id.0, score: c.score.map(|s| s.as_f64().into()), level: None })
                    .collect(),
            })
            .collect();
        Self { agents }
    }
}

impl Inventory {
    /// Parse the spec's JSON inventory. Errors say where and what, e.g.
    /// `admission inventory: agent 1 (`web (claude)`): component 2 (`mcp:x`): `12` is not a risk score: …`.
    pub fn from_json(text: &str) -> Result<Self, AdmissionError> {
        let file: InventoryFile = serde_json::from_str(text).map_err(|e| AdmissionError::Inventory(json_error(&e)))?;
        file.try_into()
    }

    /// The inventory in the spec's JSON format, pretty-printed.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(&InventoryFile::from(self.clone())).unwrap_or_default()
    }

    /// Set (or replace) `agent`'s components. A component listed twice keeps its worst rating.
    pub fn insert(&mut self, agent: impl Into<String>, components: impl IntoIterator<Item = Component>) {
        let mut merged: Vec<Component> = Vec::new();
        for c in components {
            match merged.iter_mut().find(|k| k.id == c.id) {
                Some(k) => k.score = worse(k.score, c.score),
                None => merged.push(c),
            }
        }
        self.agents.insert(agent.into(), merged);
    }

    /// `agent`'s components, each rated from `ratings` (unrated when `ratings` lacks it):
    /// how a harness's configured servers and a scanner's report become an inventory entry.
    pub fn insert_rated(
        &mut self,
        agent: impl Into<String>,
        components: impl IntoIterator<Item = ComponentId>,
        ratings: &Ratings,
    ) {
        let rated = components.into_iter().map(|id| {
            let score = ratings.get(&id).copied().flatten();
            Component { id, score }
        });
        self.insert(agent, rated);
    }

    pub fn remove(&mut self, agent: &str) -> bool {
        self.agents.remove(agent).is_some()
    }

    pub fn get(&self, agent: &str) -> Option<&[Component]> {
        self.agents.get(agent).map(Vec::as_slice)
    }

    /// Every agent and its components, by name.
    pub fn agents(&self) -> impl Iterator<Item = (&str, &[Component])> {
        self.agents.iter().map(|(a, c)| (a.as_str(), c.as_slice()))
    }

    pub fn len(&self) -> usize {
        self.agents.len()
    }

    pub fn is_empty(&self) -> bool {
        self.agents.is_empty()
    }
}

/// The worse of two ratings: unrated counts as worst, because unknown means no.
fn worse(a: Option<Score>, b: Option<Score>) -> Option<Score> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        _ => None,
    }
}

/// `message at line L column C` → `line L, column C: message`.
pub(crate) fn json_error(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let message = text.rsplit_once(" at line ").map_or(text.as_str(), |(m, _)| m);
    if e.line() == 0 { message.to_owned() } else { format!("line {}, column {}: {message}", e.line(), e.column()) }
}

/// Whether the gate is on, and whether it refuses or only reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// No admission checks: the core's default, so embedders without an inventory are
    /// unaffected. (The `agentfw` daemon starts in [`Mode::Report`], AD6.)
    #[default]
    Off,
    /// Admit everyone; what enforcement would refuse becomes a `would refuse: …` warning.
    Report,
    /// Refuse agents that are not admitted.
    Enforce,
}

impl FromStr for Mode {
    type Err = AdmissionError;

    fn from_str(s: &str) -> Result<Self, AdmissionError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "off" => Ok(Mode::Off),
            "report" | "report-only" => Ok(Mode::Report),
            "enforce" => Ok(Mode::Enforce),
            _ => Err(AdmissionError::Mode(s.to_owned())),
        }
    }
}

/// The gate's settings. The defaults are the spec's, with the gate off (see [`Mode::Off`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AdmissionConfig {
    pub mode: Mode,
    /// A component at or above this score keeps its agent out (default 7.0).
    pub threshold: Score,
    /// Components the admin excused (AD4).
    pub exceptions: BTreeSet<ComponentId>,
    /// How long a delivery to or from an unknown agent waits for its refresh (AD5).
    pub refresh_wait: Duration,
    /// How long a session's one refresh is remembered.
    pub refresh_memory: Duration,
}

impl Default for AdmissionConfig {
    fn default() -> Self {
        Self {
            mode: Mode::Off,
            threshold: Score::DEFAULT_THRESHOLD,
            exceptions: BTreeSet::new(),
            refresh_wait: Duration::from_secs(5),
            refresh_memory: Duration::from_secs(3600),
        }
    }
}

/// Why an agent is not admitted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "why", rename_all = "snake_case")]
pub enum NotAdmitted {
    /// Its worst component is at or over the threshold (AD2, AD3).
    OverThreshold { component: ComponentId, score: Score, level: Level },
    /// One of its components has no rating (AD5).
    Unrated { component: ComponentId },
    /// No inventory lists the agent (AD5).
    Unknown,
}

impl NotAdmitted {
    /// A stable code: `admission.refused`, `admission.unrated` or `admission.unknown`.
    pub fn code(&self) -> ReasonCode {
        match self {
            NotAdmitted::OverThreshold { .. } => ReasonCode::AdmissionRefused,
            NotAdmitted::Unrated { .. } => ReasonCode::AdmissionUnrated,
            NotAdmitted::Unknown => ReasonCode::AdmissionUnknown,
        }
    }

    /// Not a verdict on the agent but a gap in what is known: a refresh may fill it.
    pub fn is_unknown(&self) -> bool {
        !matches!(self, NotAdmitted::OverThreshold { .. })
    }
}

impl fmt::Display for NotAdmitted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotAdmitted::OverThreshold { component, score, level } => write!(f, "{component} is {level} ({score})"),
            NotAdmitted::Unrated { component } => {
                write!(
                    f,
                    "{component} has no risk rating yet; retry in a few seconds, and if it persists ask your user"
                )
            }
            NotAdmitted::Unknown => f.write_str(
                "it is not in the admission inventory yet; retry in a few seconds, and if it persists ask your user",
            ),
        }
    }
}

/// A component with its rating, for reports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rated {
    pub component: ComponentId,
    pub score: Score,
    pub level: Level,
}

/// The gate's verdict on one agent, with what decided it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evaluation {
    /// The agent as the inventory names it (or the asked-for name when it is unknown).
    pub agent: String,
    pub admitted: bool,
    /// Why not, when not admitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<NotAdmitted>,
    /// The worst rated component that counts (excused ones do not), admitted or not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worst: Option<Rated>,
    /// Components that would count but are excused (AD4).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excused: Vec<ComponentId>,
}

impl Evaluation {
    /// The verdict as a sentence about `subject` (`your agent is`, `the recipient, api
    /// (codex), is`): `your agent is not admitted to the network: mcp:github is HIGH (7.5)`.
    pub fn sentence(&self, subject: &str) -> Option<String> {
        self.refused.as_ref().map(|why| format!("{subject} not admitted to the network: {why}"))
    }

    /// One line for people: `web (claude): admitted` or `web (claude): refused: mcp:github is
    /// HIGH (7.5)`; in report mode `would refuse` instead of `refused`.
    pub fn line(&self, mode: Mode) -> String {
        let excused = if self.excused.is_empty() {
            String::new()
        } else {
            let list: Vec<&str> = self.excused.iter().map(ComponentId::as_str).collect();
            format!(" (excused: {})", list.join(", "))
        };
        match &self.refused {
            None => format!("{}: admitted{excused}", self.agent),
            Some(why) => {
                let verb = if mode == Mode::Report { "would refuse" } else { "refused" };
                format!("{}: {verb}: {why}{excused}", self.agent)
            }
        }
    }
}

/// Judge one agent's components: the worst one that counts decides (AD2).
pub fn evaluate(
    agent: &str,
    components: Option<&[Component]>,
    threshold: Score,
    exceptions: &BTreeSet<ComponentId>,
) -> Evaluation {
    let Some(components) = components else {
        return Evaluation {
            agent: agent.to_owned(),
            admitted: false,
            refused: Some(NotAdmitted::Unknown),
            worst: None,
            excused: Vec::new(),
        };
    };
    let mut excused = Vec::new();
    let mut worst: Option<&Component> = None;
    let mut unrated: Option<&ComponentId> = None;
    for c in components {
        let counts = match c.score {
            Some(score) => score >= threshold,
            None => true,
        };
        if exceptions.contains(&c.id) {
            if counts {
                excused.push(c.id.clone());
            }
            continue;
        }
        match c.score {
            None => unrated = unrated.or(Some(&c.id)),
            Some(score) => {
                if worst.and_then(|w| w.score).is_none_or(|w| score > w) {
                    worst = Some(c);
                }
            }
        }
    }
    let worst = worst.and_then(|c| c.score.map(|score| Rated { component: c.id.clone(), score, level: score.level() }));
    let refused = match (&worst, unrated) {
        (Some(w), _) if w.score >= threshold => {
            Some(NotAdmitted::OverThreshold { component: w.component.clone(), score: w.score, level: w.level })
        }
        (_, Some(component)) => Some(NotAdmitted::Unrated { component: component.clone() }),
        _ => None,
    };
    Evaluation { agent: agent.to_owned(), admitted: refused.is_none(), refused, worst, excused }
}

/// How many agents another threshold would keep out (AD7).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preview {
    pub threshold: Score,
    pub current: Score,
    /// Agents in the inventory.
    pub total: usize,
    /// Every agent the new threshold keeps out, and why.
    pub kept_out: Vec<Evaluation>,
    /// Kept out at the new threshold but admitted at the current one.
    pub newly_kept_out: usize,
    /// Admitted at the new threshold but kept out at the current one.
    pub newly_admitted: usize,
}

impl fmt::Display for Preview {
    /// `threshold 5.0 (MEDIUM) keeps out 2 of 3 agents (1 more than 7.0 does)`, then one line
    /// per agent kept out.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.kept_out.len();
        write!(
            f,
            "threshold {} ({}) keeps out {n} of {} agent{}",
            self.threshold,
            self.threshold.level(),
            self.total,
            plural(self.total)
        )?;
        let change = match (self.newly_kept_out, self.newly_admitted) {
            (0, 0) => "the same as".to_owned(),
            (more, 0) => format!("{more} more than"),
            (0, fewer) => format!("{fewer} fewer than"),
            (more, fewer) => format!("{more} more and {fewer} fewer than"),
        };
        write!(f, " ({change} the current {})", self.current)?;
        for e in &self.kept_out {
            if let Some(why) = &e.refused {
                write!(f, "\n  {}: {why}", e.agent)?;
            }
        }
        Ok(())
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// What the firewall does about one agent on one message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GateVerdict {
    Admit,
    /// Report-only mode: admitted, with this `would refuse: …` warning (AD6).
    Warn {
        code: ReasonCode,
        text: String,
    },
    /// Not admitted. `code` is `admission.refused`, `admission.unrated`, `admission.unknown`,
    /// or `admission.refresh` on a session's first contact while unknown.
    Refuse {
        code: ReasonCode,
        text: String,
    },
}

/// The gate's answer for one agent: the verdict, and whether the adapter should refresh this
/// agent's inventory entry now (AD5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GateCheck {
    pub verdict: GateVerdict,
    /// The agent is unknown and this is its one refresh: the adapter should look up its
    /// components and ratings (collector, relay) and set them. The firewall turns this into
    /// [`crate::firewall::Event::AdmissionRefresh`].
    pub refresh: bool,
}

/// The gate: settings, the verdict copy (inventory), and the sessions that had their one
/// refresh. Part of the firewall's snapshotted state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Admission {
    config: AdmissionConfig,
    inventory: Inventory,
    refreshed: BTreeMap<AgentId, Timestamp>,
}

impl Admission {
    pub fn new(config: AdmissionConfig) -> Self {
        Self { config, inventory: Inventory::default(), refreshed: BTreeMap::new() }
    }

    pub fn config(&self) -> &AdmissionConfig {
        &self.config
    }

    pub fn mode(&self) -> Mode {
        self.config.mode
    }

    pub fn threshold(&self) -> Score {
        self.config.threshold
    }

    pub fn inventory(&self) -> &Inventory {
        &self.inventory
    }

    pub fn set_inventory(&mut self, inventory: Inventory) {
        self.inventory = inventory;
    }

    /// Set one agent's components, e.g. after a refresh.
    pub fn set_components(&mut self, agent: impl Into<String>, components: Vec<Component>) {
        self.inventory.insert(agent, components);
    }

    pub fn set_mode(&mut self, mode: Mode) {
        self.config.mode = mode;
    }

    pub fn set_threshold(&mut self, threshold: Score) {
        self.config.threshold = threshold;
    }

    /// Excuse a component (AD4). False if it already was.
    pub fn except(&mut self, component: ComponentId) -> bool {
        self.config.exceptions.insert(component)
    }

    /// Withdraw an exception. False if there was none.
    pub fn unexcept(&mut self, component: &ComponentId) -> bool {
        self.config.exceptions.remove(component)
    }

    /// The verdict on the inventory entry named `agent` (a label or an agent id).
    pub fn evaluate(&self, agent: &str) -> Evaluation {
        evaluate(agent, self.inventory.get(agent), self.config.threshold, &self.config.exceptions)
    }

    /// The verdict on `agent`, found in the inventory by its id, else by its label.
    pub fn evaluate_agent(&self, agent: &Agent) -> Evaluation {
        let label = agent.label();
        let key = if self.inventory.get(agent.id.as_str()).is_some() { agent.id.as_str() } else { label.as_str() };
        self.evaluate(key)
    }

    /// The verdict on every agent in the inventory, by name.
    pub fn evaluate_all(&self) -> Vec<Evaluation> {
        self.inventory.agents().map(|(agent, _)| self.evaluate(agent)).collect()
    }

    /// What `threshold` would do to the inventory, with today's exceptions (AD7).
    pub fn preview(&self, threshold: Score) -> Preview {
        let ex = &self.config.exceptions;
        let mut kept_out = Vec::new();
        let (mut newly_kept_out, mut newly_admitted) = (0, 0);
        for (agent, components) in self.inventory.agents() {
            let now = evaluate(agent, Some(components), self.config.threshold, ex);
            let then = evaluate(agent, Some(components), threshold, ex);
            match (now.admitted, then.admitted) {
                (true, false) => newly_kept_out += 1,
                (false, true) => newly_admitted += 1,
                _ => {}
            }
            if !then.admitted {
                kept_out.push(then);
            }
        }
        Preview {
            threshold,
            current: self.config.threshold,
            total: self.inventory.len(),
            kept_out,
            newly_kept_out,
            newly_admitted,
        }
    }

    /// The check the route makes for `agent` on a message ([`crate::route`]). `subject`
    /// names it in the reason: `your agent is` for the side acting now, `the recipient, api
    /// (codex), is` for the far side. Where the agent can be refreshed (`may_refresh`: not at
    /// the relay) and it is unknown and has not had its one refresh, the answer asks for it;
    /// [`Admission::refreshing`] records that it was given.
    pub fn gate(&self, agent: &Agent, subject: &str, may_refresh: bool) -> GateCheck {
        let admit = GateCheck { verdict: GateVerdict::Admit, refresh: false };
        if self.config.mode == Mode::Off {
            return admit;
        }
        let evaluation = self.evaluate_agent(agent);
        let (Some(why), Some(sentence)) = (&evaluation.refused, evaluation.sentence(subject)) else {
            return admit;
        };
        let refresh = may_refresh && why.is_unknown() && !self.refreshed.contains_key(&agent.id);
        let verdict = match self.config.mode {
            Mode::Off => GateVerdict::Admit,
            Mode::Report => {
                GateVerdict::Warn { code: ReasonCode::AdmissionWouldRefuse, text: format!("would refuse: {sentence}") }
            }
            Mode::Enforce if refresh => GateVerdict::Refuse {
                code: ReasonCode::AdmissionRefresh,
                text: format!(
                    "{subject} not admitted to the network yet: agentfw is looking up its components; retry in a few seconds"
                ),
            },
            Mode::Enforce => GateVerdict::Refuse { code: why.code(), text: sentence },
        };
        GateCheck { verdict, refresh }
    }

    /// `agent` had its one refresh at `now` (AD5): later checks say to retry instead.
    pub fn refreshing(&mut self, now: Timestamp, agent: &AgentId) {
        self.refreshed.entry(agent.clone()).or_insert(now);
    }

    /// Forget refreshes older than `refresh_memory`.
    pub fn expire(&mut self, now: Timestamp) {
        let keep = self.config.refresh_memory;
        self.refreshed.retain(|_, at| now.since(*at) < keep);
    }

    /// When [`Admission::expire`] next has something to forget.
    pub fn next_expiry(&self) -> Option<Timestamp> {
        self.refreshed.values().min().map(|&at| at + self.config.refresh_memory)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(id: &str, score: f64) -> Component {
        Component::rated(ComponentId::new(id).unwrap(), Score::new(score).unwrap())
    }

    #[test]
    fn scores_display_exactly_and_fall_in_bands() {
        let s = |x: f64| Score::new(x).unwrap();
        assert_eq!(s(7.5).to_string(), "7.5");
        assert_eq!(s(2.0).to_string(), "2.0");
        assert_eq!(s(7.25).to_string(), "7.25");
        assert_eq!(s(10.0).to_string(), "10.0");
        assert_eq!(s(3.99).level(), Level::Low);
        assert_eq!(s(4.0).level(), Level::Medium);
        assert_eq!(s(6.99).level(), Level::Medium);
        assert_eq!(s(7.0).level(), Level::High);
        assert_eq!(s(8.99).level(), Level::High);
        assert_eq!(s(9.0).level(), Level::Critical);
        for bad in [-0.1, 10.01, f64::NAN, f64::INFINITY] {
            assert!(Score::new(bad).is_err(), "{bad}");
        }
        assert_eq!(Score::parse_threshold("high").unwrap(), s(7.0));
        assert_eq!(Score::parse_threshold(" 6.5 ").unwrap(), s(6.5));
        assert!(Score::parse_threshold("severe").is_err());
    }

    #[test]
    fn the_worst_component_decides_and_an_average_would_not() {
        let mut many: Vec<Component> = (0..10).map(|i| c(&format!("mcp:ok{i}"), 1.0)).collect();
        many.push(c("mcp:github", 7.5));
        let e = evaluate("web (claude)", Some(&many), Score::DEFAULT_THRESHOLD, &BTreeSet::new());
        assert!(!e.admitted);
        assert_eq!(
            e.sentence("your agent is").unwrap(),
            "your agent is not admitted to the network: mcp:github is HIGH (7.5)"
        );
    }

    #[test]
    fn component_ids_need_a_kind_and_a_name() {
        assert!(ComponentId::new("mcp:github").is_ok());
        assert!(ComponentId::new("skill:deploy").is_ok());
        for bad in ["github", ":x", "mcp:", "MCP:x", "mcp:a\nb"] {
            assert!(ComponentId::new(bad).is_err(), "{bad}");
        }
        assert_eq!(
            ComponentId::new("github").unwrap_err().to_string(),
            "`github` is not a component id: it has no kind: write `mcp:<server>` or `skill:<name>`"
        );
    }
}
