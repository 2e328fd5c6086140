//! The status line under the composer. Left: what tern is doing (a
//! spinner, "Thinking 3s · Esc to interrupt"), or a hint (which also
//! replaces "Esc to interrupt" while busy), then prompts queued and
//! background tasks running (`2 bg`). Right: model ·
//! mode · context used · tokens · cost · directory (branch). When the row
//! is narrow, right-hand items go from the least important (directory,
//! then cost, tokens, context) until model and mode are left; then the
//! left side is cut.

use std::time::{Duration, Instant};

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::wrap::{str_width, truncate};
use crate::theme::Theme;
use tern_runtime::Mode;

/// Spinner frames, one per [`FRAME`].
const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/// How long each spinner frame shows.
const FRAME: Duration = Duration::from_millis(80);
/// Context use, in percent, from which the figure is a warning.
const CONTEXT_WARNING_PCT: u8 = 80;
const SEPARATOR: &str = " · ";
/// A left-hand span cut shorter than this is dropped instead.
const MIN_CUT_SPAN: usize = 5;

/// What the status line shows.
#[derive(Debug, Clone, Default)]
pub struct StatusInfo {
    /// The model's name.
    pub model: String,
    /// The permission mode (`default`, `accept-edits`, `plan`, `bypass`).
    pub mode: Mode,
    /// Percentage of the context window in use, when known.
    pub context_pct: Option<u8>,
    /// Input tokens this session.
    pub tokens_in: u64,
    /// Output tokens this session.
    pub tokens_out: u64,
    /// Cost this session, in US dollars.
    pub cost_usd: f64,
    /// The working directory as shown (e.g. `~/proj`).
    pub cwd: String,
    /// The git branch, if any.
    pub branch: Option<String>,
    /// What tern is busy with ("Thinking", "Running bash") and since when.
    pub busy: Option<(String, Instant)>,
    /// Messages typed while busy, waiting for their turn.
    pub queued: usize,
    /// Background tasks running (bash commands, subagents).
    pub background: usize,
    /// A hint that replaces the default one, e.g. "Ctrl+C again to quit".
    pub hint: Option<String>,
    /// A warning that stays until what it warns of is over (the session
    /// not saved to disk), shown first.
    pub alert: Option<String>,
}

/// `950`, `12.3k`, `123k`, `1.2M`.
/// `1234` as `1.2k`, `1234567` as `1.2M`.
pub fn compact_count(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=99_999 => format!("{:.1}k", n as f64 / 1e3),
        100_000..=999_999 => format!("{}k", n / 1_000),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// `3s`, `1m 05s`, `1h 02m`.
fn elapsed(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, s % 3600 / 60),
    }
}

fn cost(usd: f64) -> String {
    if usd > 0.0 && usd < 0.01 { "<$0.01".to_string() } else { format!("${usd:.2}") }
}

fn mode_style(mode: Mode, theme: &Theme) -> Style {
    match mode {
        Mode::AcceptEdits => theme.warning(),
        Mode::Plan => theme.accent(),
        Mode::Bypass => theme.error(),
        Mode::Default | Mode::DontAsk => theme.dim(),
    }
}

/// The left side's spans; the last one is the "Esc to interrupt" hint, shown only when there is room.
fn left_spans(info: &StatusInfo, theme: &Theme, now: Instant) -> (Vec<Span<'static>>, Option<Span<'static>>) {
    let mut spans = Vec::new();
    if let Some(alert) = &info.alert {
        spans.push(Span::styled(format!("⚠ {alert}"), theme.error()));
        spans.push(Span::styled(SEPARATOR, theme.dim()));
    }
    if let Some((label, since)) = &info.busy {
        let took = now.saturating_duration_since(*since);
        let frame = (took.as_millis() / FRAME.as_millis()) as usize % SPINNER.len();
        spans.push(Span::styled(format!("{} ", SPINNER[frame]), theme.accent()));
        spans.push(Span::styled(format!("{label} "), theme.text()));
        spans.push(Span::styled(elapsed(took), theme.dim()));
        if let Some(hint) = &info.hint {
            spans.push(Span::styled(format!(" · {hint}"), theme.warning()));
        }
    } else if let Some(hint) = &info.hint {
        spans.push(Span::styled(hint.clone(), theme.warning()));
    } else {
        spans.push(Span::styled("? /help", theme.dim()));
    }
    if info.queued > 0 {
        spans.push(Span::styled(format!(" · {} queued", info.queued), theme.dim()));
    }
    if info.background > 0 {
        spans.push(Span::styled(format!(" · {} bg", info.background), theme.accent()));
    }
    let optional =
        (info.busy.is_some() && info.hint.is_none()).then(|| Span::styled(" · Esc to interrupt", theme.dim()));
    (spans, optional)
}

/// The right side's items, most important first.
fn right_items(info: &StatusInfo, theme: &Theme) -> Vec<Vec<Span<'static>>> {
    let mut items = vec![
        vec![Span::styled(info.model.clone(), theme.text())],
        vec![Span::styled(info.mode.to_string(), mode_style(info.mode, theme))],
    ];
    if let Some(pct) = info.context_pct {
        let style = if pct >= CONTEXT_WARNING_PCT { theme.warning() } else { theme.dim() };
        items.push(vec![Span::styled(format!("ctx {pct}%"), style)]);
    }
    if info.tokens_in > 0 || info.tokens_out > 0 {
        let text = format!("↑{} ↓{}", compact_count(info.tokens_in), compact_count(info.tokens_out));
        items.push(vec![Span::styled(text, theme.dim())]);
    }
    if info.cost_usd > 0.0 {
        items.push(vec![Span::styled(cost(info.cost_usd), theme.dim())]);
    }
    if !info.cwd.is_empty() {
        let mut place = vec![Span::styled(info.cwd.clone(), theme.dim())];
        if let Some(branch) = &info.branch {
            place.push(Span::styled(format!(" ({branch})"), theme.dim()));
        }
        items.push(place);
    }
    items
}

fn width_of(spans: &[Span<'_>]) -> usize {
    spans.iter().map(|s| str_width(&s.content)).sum()
}

/// Columns the busy side keeps in a narrow terminal: the spinner, a word, the time.
const BUSY_MIN: usize = 16;

/// Draws the status line in the first row of `area`; `now` drives the spinner and the elapsed time.
pub fn render_status(info: &StatusInfo, area: Rect, buf: &mut Buffer, theme: &Theme, now: Instant) {
    if area.height == 0 || area.width == 0 {
        return;
    }
    let width = usize::from(area.width);
    let mut items = right_items(info, theme);
    let joined = |items: &[Vec<Span<'static>>]| -> Vec<Span<'static>> {
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.push(Span::styled(SEPARATOR, theme.dim()));
            }
            out.extend(item.iter().cloned());
        }
        out
    };
    let (mut left, optional) = left_spans(info, theme, now);
    let left_width = width_of(&left);
    // One space of margin at each end, and at least two between the sides.
    let mut right = joined(&items);
    while items.len() > 2 && left_width + 2 + width_of(&right) + 2 > width {
        items.pop();
        right = joined(&items);
    }
    let mut right_width = width_of(&right);
    // While busy the spinner, what tern does and for how long come first: the
    // model's name gives way to them.
    let reserve = if info.busy.is_some() { BUSY_MIN.min(left_width) + 2 } else { 0 };
    if right_width + 2 + reserve > width {
        // Not even model and mode fit: cut the model name.
        let over = right_width + 2 + reserve - width;
        let model = &info.model;
        let keep = str_width(model).saturating_sub(over).max(1);
        items[0] = vec![Span::styled(truncate(model, keep), theme.text())];
        right = joined(&items);
        right_width = width_of(&right);
    }
    let y = area.y;
    let right_x = area.x + u16::try_from(width.saturating_sub(right_width + 1)).unwrap_or(0);
    buf.set_line(right_x, y, &Line::from(right), u16::try_from(right_width).unwrap_or(0));
    let left_room = usize::from(right_x - area.x).saturating_sub(3);
    if let Some(extra) = optional
        && left_width + str_width(&extra.content) <= left_room
    {
        left.push(extra);
    }
    if left_room > 0 {
        let left = fit(left, left_room);
        buf.set_line(area.x + 1, y, &Line::from(left), u16::try_from(left_room).unwrap_or(0));
    }
}

/// Spans cut to `width` columns, the last one ending in `…` when something was cut.
fn fit(spans: Vec<Span<'static>>, width: usize) -> Vec<Span<'static>> {
    if width_of(&spans) <= width {
        return spans;
    }
    let mut out = Vec::new();
    let mut used = 0;
    for span in spans {
        let w = str_width(&span.content);
        if used + w <= width {
            used += w;
            out.push(span);
        } else {
            // A stub like "T…" says nothing: leave it out.
            let room = width - used;
            if room >= MIN_CUT_SPAN {
                out.push(Span::styled(truncate(&span.content, room), span.style));
            }
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_alert_stays_first_while_busy_and_in_a_narrow_row() {
        let info = StatusInfo {
            model: "claude-sonnet-4-5".into(),
            alert: Some("session not saved to disk".into()),
            busy: Some(("Thinking".into(), Instant::now())),
            cwd: "~/proj".into(),
            ..Default::default()
        };
        for width in [120u16, 60] {
            let area = Rect::new(0, 0, width, 1);
            let mut buf = Buffer::empty(area);
            render_status(&info, area, &mut buf, &Theme::plain(), Instant::now());
            let row: String = (0..width).map(|x| buf[(x, 0)].symbol().to_string()).collect();
            assert!(row.trim_start().starts_with("⚠ session not saved to disk"), "{width}: {row}");
        }
    }

    #[test]
    fn formats_counts_times_and_money() {
        assert_eq!(
            [compact_count(950), compact_count(12_345), compact_count(123_456), compact_count(1_234_567)],
            ["950", "12.3k", "123k", "1.2M"]
        );
        assert_eq!(
            [elapsed(Duration::from_secs(3)), elapsed(Duration::from_secs(65)), elapsed(Duration::from_secs(3720))],
            ["3s", "1m 05s", "1h 02m"]
        );
        assert_eq!([cost(0.0), cost(0.004), cost(0.04)], ["$0.00", "<$0.01", "$0.04"]);
    }
}
