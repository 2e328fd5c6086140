//! An MCP server's form (elicitation) put to the person as questions, and
//! their answers read back into the form's types. The questions go through
//! the front end's `ask_user` card (the TUI); where nobody can answer
//! (headless, an SDK, an editor), the form is declined. Pure: [`questions`]
//! and [`content`] take and give plain data.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value};
use tern_mcp::{Elicitation, Elicitor};
use tern_protocol::{QuestionOption, UserAnswer, UserQuestion};

use crate::interactive::Interaction;

/// The most fields one form may ask for.
const MAX_FIELDS: usize = 16;

/// One field of a form.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Field {
    name: String,
    kind: Kind,
    required: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Text,
    Integer,
    Number,
    Boolean,
    /// A list of choices (`array` of an `enum`).
    Choices,
}

/// The questions for `form`, one per field (choices for an enum or a
/// boolean), and the fields to read the answers into. None when the form
/// is not one tern can ask (not an object of primitive fields, too many).
pub(crate) fn questions(form: &Elicitation) -> Option<(Vec<UserQuestion>, Vec<Field>)> {
    let props = form.schema.get("properties")?.as_object()?;
    if props.is_empty() || props.len() > MAX_FIELDS {
        return None;
    }
    let required: Vec<&str> =
        form.schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let mut questions = Vec::new();
    let mut fields = Vec::new();
    for (name, p) in props {
        let is_required = required.contains(&name.as_str());
        let item_choices = p.pointer("/items/enum").and_then(Value::as_array);
        let kind = match p.get("type").and_then(Value::as_str) {
            Some("string") => Kind::Text,
            Some("integer") => Kind::Integer,
            Some("number") => Kind::Number,
            Some("boolean") => Kind::Boolean,
            Some("array") if item_choices.is_some() => Kind::Choices,
            // A field tern cannot ask: the form is declined only when it is required.
            _ if is_required => return None,
            _ => continue,
        };
        let title = p.get("title").and_then(Value::as_str).unwrap_or(name);
        let about = p.get("description").and_then(Value::as_str).map(|d| format!(" ({d})")).unwrap_or_default();
        let option = |label: &str| QuestionOption { label: label.to_string(), description: None };
        let enum_of = |v: Option<&Vec<Value>>| -> Vec<QuestionOption> {
            v.into_iter().flatten().filter_map(Value::as_str).map(option).collect()
        };
        let options = match kind {
            Kind::Boolean => vec![option("yes"), option("no")],
            Kind::Choices => enum_of(item_choices),
            _ => enum_of(p.get("enum").and_then(Value::as_array)),
        };
        questions.push(UserQuestion {
            question: format!("MCP server `{}` asks: {} — {title}{about}", form.server, form.message),
            header: Some(title.chars().take(12).collect()),
            options,
            multi_select: kind == Kind::Choices,
        });
        fields.push(Field { name: name.clone(), kind, required: is_required });
    }
    Some((questions, fields))
}

/// The form's content from `answers` (in question order), each in its
/// field's type; None when a required field is empty or an answer is not
/// of its type (the form is then declined).
pub(crate) fn content(fields: &[Field], answers: &[UserAnswer]) -> Option<Value> {
    let mut out = Map::new();
    for (i, field) in fields.iter().enumerate() {
        if field.kind == Kind::Choices {
            let picked: Vec<Value> = answers
                .get(i)
                .into_iter()
                .flat_map(|a| a.answers.iter())
                .filter(|s| !s.trim().is_empty())
                .map(|s| Value::String(s.trim().to_string()))
                .collect();
            if picked.is_empty() && field.required {
                return None;
            }
            out.insert(field.name.clone(), Value::Array(picked));
            continue;
        }
        let text = answers.get(i).and_then(|a| a.answers.first()).map(|s| s.trim()).unwrap_or_default();
        if text.is_empty() {
            if field.required {
                return None;
            }
            continue;
        }
        let value = match field.kind {
            Kind::Text => Value::String(text.to_string()),
            Kind::Integer => Value::from(text.parse::<i64>().ok()?),
            Kind::Number => serde_json::Number::from_f64(text.parse::<f64>().ok()?).map(Value::Number)?,
            Kind::Boolean => Value::Bool(matches!(text.to_ascii_lowercase().as_str(), "yes" | "true" | "y")),
            Kind::Choices => continue,
        };
        out.insert(field.name.clone(), value);
    }
    Some(Value::Object(out))
}

/// The session's person fills the forms, through the running prompt's front end.
pub(crate) struct SessionElicitor {
    pub(crate) interaction: Arc<Interaction>,
}

impl Elicitor for SessionElicitor {
    fn elicit(&self, request: Elicitation) -> BoxFuture<'static, Option<Value>> {
        let interaction = self.interaction.clone();
        Box::pin(async move {
            let prompt = interaction.prompt()?;
            if !prompt.interactive() {
                return None;
            }
            let (questions, fields) = questions(&request)?;
            let answers = prompt.ask_user(questions).await?;
            content(&fields, &answers)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_form_becomes_questions_and_answers_its_types() {
        let form = Elicitation {
            server: "s".into(),
            message: "Book a table".into(),
            schema: json!({"type": "object", "properties": {
                "name": {"type": "string", "title": "Name"},
                "guests": {"type": "integer"},
                "terrace": {"type": "boolean"},
                "time": {"type": "string", "enum": ["18:00", "20:00"]}
            }, "required": ["name", "guests"]}),
        };
        let (qs, fields) = questions(&form).unwrap();
        assert_eq!(qs.len(), 4);
        let time = qs.iter().find(|q| q.question.ends_with("time")).unwrap();
        assert_eq!(time.options.len(), 2);
        let answer = |q: &UserQuestion, a: &str| UserAnswer { question: q.question.clone(), answers: vec![a.into()] };
        let by_field = |f: &Field| match f.name.as_str() {
            "name" => "Ada",
            "guests" => "4",
            "terrace" => "yes",
            _ => "20:00",
        };
        let answers: Vec<UserAnswer> = qs.iter().zip(&fields).map(|(q, f)| answer(q, by_field(f))).collect();
        assert_eq!(
            content(&fields, &answers).unwrap(),
            json!({"name": "Ada", "guests": 4, "terrace": true, "time": "20:00"})
        );
        // Not a number where one is asked, or a required field left empty: declined.
        let mut bad = answers.clone();
        let guests = fields.iter().position(|f| f.name == "guests").unwrap();
        bad[guests].answers = vec!["four".into()];
        assert_eq!(content(&fields, &bad), None);
        bad[guests].answers = vec![String::new()];
        assert_eq!(content(&fields, &bad), None);
        // A required field tern cannot ask declines the form; an optional one is left out.
        let nested = json!({"type": "object", "properties": {"a": {"type": "object"}, "b": {"type": "string"}}});
        let optional = Elicitation { schema: nested.clone(), ..form.clone() };
        assert_eq!(questions(&optional).unwrap().1.len(), 1);
        let mut required = nested;
        required["required"] = json!(["a"]);
        assert!(questions(&Elicitation { schema: required, ..form.clone() }).is_none());
        // A list of choices is one multi-select question.
        let list = json!({"type": "object", "properties": {"tags": {"type": "array", "items": {"enum": ["x", "y"]}}}});
        let (qs, fields) = questions(&Elicitation { schema: list, ..form }).unwrap();
        assert!(qs[0].multi_select && qs[0].options.len() == 2);
        let picked = UserAnswer { question: qs[0].question.clone(), answers: vec!["x".into(), "y".into()] };
        assert_eq!(content(&fields, &[picked]).unwrap(), json!({"tags": ["x", "y"]}));
    }
}
