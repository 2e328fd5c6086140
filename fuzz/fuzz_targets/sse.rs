//! Bytes from a provider, cut at an arbitrary point, through the SSE parser
//! and each wire's accumulator: never a panic, whatever arrives.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tern_llm::Accumulator;

fuzz_target!(|data: &[u8]| {
    let Some((&cut, body)) = data.split_first() else { return };
    let at = (cut as usize * body.len()) / 256;
    let mut parser = tern_llm::sse::SseParser::new();
    let mut events = parser.feed(&body[..at]);
    events.extend(parser.feed(&body[at..]));
    events.extend(parser.finish());
    let mut accumulators: Vec<Box<dyn Accumulator>> = vec![
        Box::new(tern_llm::anthropic::AnthropicAccumulator::new()),
        Box::new(tern_llm::openai_chat::ChatAccumulator::new()),
        Box::new(tern_llm::openai_responses::ResponsesAccumulator::new()),
    ];
    for acc in &mut accumulators {
        for e in &events {
            if acc.on_event(&e.event, &e.data).is_err() {
                break;
            }
        }
    }
    for acc in accumulators {
        let _ = acc.finish();
    }
});
