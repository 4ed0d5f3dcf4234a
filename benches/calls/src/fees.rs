//! What the IC bills for a call, in cycles (docs/metering.md §8: a 13-node application
//! subnet's fees, `rs/config/src/subnet_config.rs` and `rs/cycles_account_manager`).

/// docs/metering.md §8: executing an update message.
const UPDATE_EXECUTION_FEE: u64 = 5_000_000;
/// docs/metering.md §8: 10 cycles per 10 instructions (wasm32).
const CYCLES_PER_INSTRUCTION: u64 = 1;
/// docs/metering.md §8: receiving an ingress message.
const INGRESS_MESSAGE_FEE: u64 = 1_200_000;
/// docs/metering.md §8: per byte of the ingress message.
const INGRESS_BYTE_FEE: u64 = 2_000;

/// docs/metering.md §7.1: the instructions one execution thread runs per round
/// (`MAX_INSTRUCTIONS_PER_ROUND`), which bounds what one canister executes per round.
const INSTRUCTIONS_PER_ROUND: u64 = 4_000_000_000;

/// How many messages of `instructions` each one canister executes per round, at most
/// (docs/metering.md §7.1: about one round per second).
pub fn calls_per_round(instructions: u64) -> u64 {
    INSTRUCTIONS_PER_ROUND / instructions.max(1)
}

/// Cycles of an ingress update call (or a query called in replicated mode) of `method`
/// with `argument_bytes` of Candid that executes `instructions`. The ingress fee is counted
/// on the method name and the argument; the signed envelope around them (sender, signature,
/// expiry) adds bytes this does not know.
pub fn update_call_cycles(method: &str, argument_bytes: u64, instructions: u64) -> u64 {
    let ingress_bytes = method.len() as u64 + argument_bytes;
    UPDATE_EXECUTION_FEE
        + CYCLES_PER_INSTRUCTION * instructions
        + INGRESS_MESSAGE_FEE
        + INGRESS_BYTE_FEE * ingress_bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_holds_its_limit_of_instructions() {
        assert_eq!(calls_per_round(1_000_000), 4_000);
        assert_eq!(calls_per_round(3_000_000_000), 1);
        assert_eq!(calls_per_round(0), INSTRUCTIONS_PER_ROUND);
    }

    #[test]
    fn an_update_pays_execution_and_ingress() {
        // 5,000,000 + 1,000 + 1,200,000 + 2,000 × (9 + 20).
        assert_eq!(update_call_cycles("get_users", 20, 1_000), 6_259_000);
    }
}
