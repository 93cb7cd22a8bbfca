//! Prices the user sets for agents that report tokens but not their cost
//! (Codex, Copilot, Cursor, or a provider billed at other rates), so that
//! `--max-cost` and the cost shown work for them too. In US dollars per
//! million tokens, in the user's `config.toml`:
//!
//! ```toml
//! [prices.codex]
//! input = 1.25
//! cached_input = 0.125   # tokens read from the prompt cache; default: input's price
//! output = 10.0
//! ```
//!
//! Read from the user's own file only: a repository's `slipway.toml`, which
//! an agent's work can change, cannot make a run look cheaper than it is.
//! A cost the agent reports itself is used as it is.

use std::path::{Path, PathBuf};

use toml_edit::{DocumentMut, Item, TableLike};

use super::result::Usage;

/// The agents a price may be set for (`[prices.<agent>]`).
const AGENTS: &[&str] = &[
    "claude-code",
    "codex",
    "opencode",
    "pi",
    "copilot",
    "cursor",
];

/// Keys of one `[prices.<agent>]` table.
const KEYS: &[&str] = &["input", "cached_input", "output"];

/// What one agent's tokens cost, in US dollars per million.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    /// Input tokens not read from the cache.
    pub input: f64,
    /// Input tokens read from the prompt cache.
    pub cached_input: f64,
    /// Output tokens.
    pub output: f64,
}

impl Price {
    /// What `usage` costs at this price.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let cached = usage.cached_input_tokens.min(usage.input_tokens);
        let fresh = usage.input_tokens - cached;
        (fresh as f64 * self.input
            + cached as f64 * self.cached_input
            + usage.output_tokens as f64 * self.output)
            / 1_000_000.0
    }

    /// Gives `usage` its cost at this price, unless the agent reported one.
    pub fn apply(&self, usage: &mut Usage) {
        if usage.cost_priced || usage.cost_usd.is_none() {
            usage.cost_usd = Some(self.cost(usage));
            usage.cost_priced = true;
        }
    }
}

/// The user's prices cannot be read or break a rule.
#[derive(Debug, thiserror::Error)]
pub enum PriceError {
    /// The `[prices]` table breaks a rule; the message says what to write.
    #[error("{}: {message}", file.display())]
    Config {
        /// The user's config file.
        file: PathBuf,
        /// What is wrong and what to write instead.
        message: String,
    },
    /// The file exists but cannot be read.
    #[error("cannot read {}: {source}", file.display())]
    Read {
        /// The user's config file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl crate::error::Failure for PriceError {
    fn kind(&self) -> crate::error::ErrorKind {
        match self {
            PriceError::Config { .. } => crate::error::ErrorKind::PriceConfig,
            PriceError::Read { .. } => crate::error::ErrorKind::Io,
        }
    }
}

/// The price the user set for `agent` (its name, as `--agent` takes it), if any.
pub fn for_agent(agent: &str) -> Result<Option<Price>, PriceError> {
    match crate::engines::config_file() {
        Some(file) => load_from(&file, agent),
        None => Ok(None),
    }
}

/// The price `file` sets for `agent`; none when the file is missing.
pub fn load_from(file: &Path, agent: &str) -> Result<Option<Price>, PriceError> {
    match std::fs::read_to_string(file) {
        Ok(text) => parse(&text, file, agent),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(PriceError::Read {
            file: file.to_path_buf(),
            source,
        }),
    }
}

/// The price a config file's text sets for `agent`. Every agent's table is
/// checked, so a mistake is found whichever agent runs first.
pub fn parse(text: &str, file: &Path, agent: &str) -> Result<Option<Price>, PriceError> {
    let bad = |message: String| PriceError::Config {
        file: file.to_path_buf(),
        message,
    };
    let doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        bad(format!("not valid TOML: {}", e.to_string().trim_end()))
    })?;
    let Some(prices) = doc.get("prices") else {
        return Ok(None);
    };
    let example =
        "write [prices.codex] with input = 1.25 and output = 10.0 (US dollars per million tokens)";
    let prices = prices
        .as_table_like()
        .ok_or_else(|| bad(format!("prices must be a table: {example}")))?;
    let mut found = None;
    for (name, item) in prices.iter() {
        if !AGENTS.contains(&name) {
            return Err(bad(format!(
                "prices.{name}: '{name}' is not an agent slipway knows; price one of {}",
                AGENTS.join(", ")
            )));
        }
        let table = item
            .as_table_like()
            .ok_or_else(|| bad(format!("prices.{name} must be a table: {example}")))?;
        let price = read_price(table, &format!("prices.{name}")).map_err(bad)?;
        if name == agent {
            found = Some(price);
        }
    }
    Ok(found)
}

fn read_price(table: &dyn TableLike, at: &str) -> Result<Price, String> {
    for (key, _) in table.iter() {
        if !KEYS.contains(&key) {
            return Err(format!(
                "{at}: unknown key '{key}'; a price has input, cached_input and output"
            ));
        }
    }
    let number = |key: &str| -> Result<Option<f64>, String> {
        let Some(item) = table.get(key) else {
            return Ok(None);
        };
        dollars(item)
            .map(Some)
            .ok_or_else(|| format!("{at}.{key} must be a number of US dollars per million tokens, 0 or more (like {key} = 1.25)"))
    };
    let required = |key: &str| -> Result<f64, String> {
        number(key)?.ok_or_else(|| {
            format!("{at}: '{key}' is missing; add {key} = … (US dollars per million tokens)")
        })
    };
    let input = required("input")?;
    let output = required("output")?;
    let cached_input = number("cached_input")?.unwrap_or(input);
    Ok(Price {
        input,
        cached_input,
        output,
    })
}

fn dollars(item: &Item) -> Option<f64> {
    item.as_float()
        .or_else(|| item.as_integer().map(|n| n as f64))
        .filter(|v| v.is_finite() && *v >= 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, cached: u64, output: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cached_input_tokens: cached,
            ..Usage::default()
        }
    }

    #[test]
    fn prices_fresh_cached_and_output_tokens_apart() {
        let text = "[prices.codex]\ninput = 2\ncached_input = 0.5\noutput = 10\n";
        let price = parse(text, Path::new("config.toml"), "codex")
            .expect("valid")
            .expect("codex priced");
        let cost = price.cost(&usage(1_000_000, 400_000, 100_000));
        assert!((cost - (1.2 + 0.2 + 1.0)).abs() < 1e-9, "{cost}");
        let plain = parse(
            "[prices.pi]\ninput = 3\noutput = 15\n",
            Path::new("c"),
            "pi",
        )
        .expect("valid")
        .expect("pi priced");
        assert_eq!(
            plain.cached_input, 3.0,
            "cached tokens cost the input price by default"
        );
    }

    #[test]
    fn a_reported_cost_stays_and_a_priced_one_follows_the_tokens() {
        let price = Price {
            input: 1.0,
            cached_input: 1.0,
            output: 1.0,
        };
        let mut reported = Usage {
            cost_usd: Some(0.25),
            ..usage(1_000_000, 0, 0)
        };
        price.apply(&mut reported);
        assert_eq!(reported.cost_usd, Some(0.25));
        assert!(!reported.cost_priced);
        let mut priced = usage(1_000_000, 0, 0);
        price.apply(&mut priced);
        priced.output_tokens = 1_000_000;
        price.apply(&mut priced);
        assert_eq!(priced.cost_usd, Some(2.0));
        assert!(priced.cost_priced);
    }

    #[test]
    fn mistakes_say_what_to_write() {
        for (text, says) in [
            ("prices = 3\n", "prices must be a table"),
            (
                "[prices.gpt]\ninput = 1\noutput = 1\n",
                "'gpt' is not an agent",
            ),
            ("[prices.codex]\ninput = 1\n", "'output' is missing"),
            ("[prices.codex]\ninput = -1\noutput = 1\n", "0 or more"),
            (
                "[prices.codex]\ninput = \"1\"\noutput = 1\n",
                "must be a number",
            ),
            (
                "[prices.codex]\ninput = 1\noutput = 1\ncache = 1\n",
                "unknown key 'cache'",
            ),
        ] {
            let err = parse(text, Path::new("/u/config.toml"), "pi").expect_err(text);
            let message = err.to_string();
            assert!(
                message.starts_with("/u/config.toml: ") && message.contains(says),
                "{text}: {message}"
            );
        }
        assert_eq!(
            parse("[engines]\n", Path::new("c"), "codex").expect("no prices"),
            None
        );
    }
}
