//! The model's questions: choices by number or arrows, several at once,
//! an answer of your own, dismissing, and the card at small sizes.

use crossterm::event::KeyCode;
use pretty_assertions::assert_eq;
use ratatui::layout::Rect;
use tern_protocol::{QuestionOption, UserAnswer, UserQuestion};
use tern_tui::theme::Theme;
use tern_tui::widgets::question::{QuestionOutcome, QuestionPane};

use crate::support::{buffer, buffer_text, key};

fn question(text: &str, options: &[&str], multi: bool) -> UserQuestion {
    UserQuestion {
        question: text.into(),
        header: Some("Setup".into()),
        options: options.iter().map(|l| QuestionOption { label: (*l).into(), description: None }).collect(),
        multi_select: multi,
    }
}

fn draw(pane: &QuestionPane, w: u16) -> String {
    let h = pane.desired_height(w);
    let mut buf = buffer(w, h);
    pane.render(Rect::new(0, 0, w, h), &mut buf, &Theme::plain());
    buffer_text(&buf)
}

fn answer(q: &str, a: &[&str]) -> UserAnswer {
    UserAnswer { question: q.into(), answers: a.iter().map(|s| (*s).to_string()).collect() }
}

#[test]
fn numbers_arrows_and_several_questions_in_turn() {
    let mut pane = QuestionPane::new(vec![
        question("Which db?", &["Redis", "SQLite"], false),
        question("Port?", &["80", "8080"], false),
    ]);
    let first = draw(&pane, 50);
    assert!(first.contains("tern asks (1/2)") && first.contains("[Setup]") && first.contains("› 1. Redis"), "{first}");
    assert_eq!(pane.handle_key(key(KeyCode::Char('2'))), None, "on to the next question");
    assert!(draw(&pane, 50).contains("Port?"));
    pane.handle_key(key(KeyCode::Down));
    let done = pane.handle_key(key(KeyCode::Enter));
    assert_eq!(
        done,
        Some(QuestionOutcome::Answered(vec![answer("Which db?", &["SQLite"]), answer("Port?", &["8080"])]))
    );
}

#[test]
fn several_choices_are_ticked_then_sent() {
    let mut pane = QuestionPane::new(vec![question("Which checks?", &["lint", "test", "fmt"], true)]);
    pane.handle_key(key(KeyCode::Char(' ')));
    pane.handle_key(key(KeyCode::Char('3')));
    let shown = draw(&pane, 50);
    assert!(shown.contains("[x] lint") && shown.contains("[ ] test") && shown.contains("[x] fmt"), "{shown}");
    assert_eq!(
        pane.handle_key(key(KeyCode::Enter)),
        Some(QuestionOutcome::Answered(vec![answer("Which checks?", &["lint", "fmt"])]))
    );
}

#[test]
fn an_answer_of_your_own_and_dismissing() {
    let mut pane = QuestionPane::new(vec![question("Name?", &["a", "b"], false)]);
    assert_eq!(pane.handle_key(key(KeyCode::Char('3'))), None, "the last row opens a field");
    for c in "über-cache".chars() {
        pane.handle_key(key(KeyCode::Char(c)));
    }
    assert!(draw(&pane, 40).contains("über-cache"));
    pane.handle_key(key(KeyCode::Esc));
    assert!(!draw(&pane, 40).contains("über-cache"), "Esc closes the field, not the card");
    pane.handle_key(key(KeyCode::Char('3')));
    pane.handle_paste("typed\nby paste");
    assert_eq!(
        pane.handle_key(key(KeyCode::Enter)),
        Some(QuestionOutcome::Answered(vec![answer("Name?", &["typed by paste"])]))
    );
    let mut pane = QuestionPane::new(vec![question("Name?", &["a"], false)]);
    assert_eq!(pane.handle_key(key(KeyCode::Esc)), Some(QuestionOutcome::Dismissed));
}

#[test]
fn tiny_areas_do_not_panic() {
    let pane = QuestionPane::new(vec![question(&"a long question ".repeat(20), &["x", "y"], true)]);
    for (w, h) in [(1, 1), (3, 3), (10, 4), (30, 6)] {
        let mut buf = buffer(w, h);
        pane.render(Rect::new(0, 0, w, h), &mut buf, &Theme::plain());
    }
}

#[test]
fn model_text_is_drawn_clean_and_bounded() {
    let mut q = question("Pick \u{1b}[2Jone\u{202e}", &["safe\u{1b}]0;pwned\u{7}", "ok"], false);
    q.options[1].description = Some("x".repeat(10_000));
    let pane = QuestionPane::new(vec![q]);
    let text = draw(&pane, 60);
    assert!(!text.contains('\u{1b}') && !text.contains("[2J") && !text.contains('\u{202e}'), "{text}");
    assert!(text.contains("Pick one") && text.contains("1. safe"), "{text}");
    assert!(pane.desired_height(60) < 20, "a long description is cut: {}", pane.desired_height(60));
    // The answer names the choice as the model wrote it.
    let mut pane = pane;
    let QuestionOutcome::Answered(answers) = pane.handle_key(key(KeyCode::Char('1'))).unwrap() else {
        panic!("answered")
    };
    assert_eq!(answers[0].answers, ["safe\u{1b}]0;pwned\u{7}"]);
    assert_eq!(answers[0].question, "Pick \u{1b}[2Jone\u{202e}");
}

#[test]
fn a_cut_card_keeps_the_highlighted_choice_in_view() {
    let options: Vec<String> = (1..=8).map(|i| format!("choice {i}")).collect();
    let refs: Vec<&str> = options.iter().map(String::as_str).collect();
    let mut pane = QuestionPane::new(vec![question("A question\nover\nseveral\nlines", &refs, false)]);
    let (w, h) = (40, 8);
    let render = |pane: &QuestionPane| {
        let mut buf = buffer(w, h);
        pane.render(Rect::new(0, 0, w, h), &mut buf, &Theme::plain());
        buffer_text(&buf)
    };
    let top = render(&pane);
    assert!(top.contains("A question") && top.contains("› 1. choice 1"), "the question shows first: {top}");
    for _ in 0..7 {
        pane.handle_key(key(KeyCode::Down));
    }
    let low = render(&pane);
    assert!(low.contains("› 8. choice 8"), "{low}");
}
