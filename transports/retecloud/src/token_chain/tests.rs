use super::*;
use proptest::prelude::*;

fn tok(n: u8) -> Token {
    Token::from_random([n; 32])
}

const GRACE: u64 = 60_000;

#[test]
fn the_first_token_is_current() {
    let mut c = TokenChain::new(&tok(1), GRACE);
    assert_eq!(
        c.authenticate(0, &tok(1)),
        AuthOutcome::Accepted { generation: 0 }
    );
    assert_eq!(c.authenticate(0, &tok(2)), AuthOutcome::Unknown);
    assert_eq!(
        AuthOutcome::Unknown.error_code(),
        Some(ErrorCode::AuthFailed)
    );
}

#[test]
fn rotation_then_grace_then_reuse_revokes_the_chain() {
    let mut c = TokenChain::new(&tok(1), GRACE);
    let g = c.begin_rotation(&tok(2)).unwrap();
    assert_eq!(g, 1);
    // Until the acknowledgement the old token is still current.
    assert_eq!(
        c.authenticate(10, &tok(1)),
        AuthOutcome::Accepted { generation: 0 }
    );
    assert_eq!(c.pending(), vec![1], "the client may store it yet");
    // A second rotation (another connection's) leaves it waiting; once the
    // later one is acknowledged the earlier is refused.
    let g = c.begin_rotation(&tok(3)).unwrap();
    assert_eq!(g, 2);
    assert_eq!(c.pending(), vec![1, 2]);
    c.acknowledge(1_000, g).unwrap();
    assert_eq!(c.pending(), Vec::<u64>::new());
    assert_eq!(c.authenticate(1_000, &tok(2)), AuthOutcome::Unknown);
    assert!(!c.is_revoked());
    assert_eq!(
        c.authenticate(1_001, &tok(3)),
        AuthOutcome::Accepted { generation: 2 }
    );
    assert_eq!(
        c.authenticate(1_000 + GRACE - 1, &tok(1)),
        AuthOutcome::AcceptedInGrace { generation: 0 }
    );
    assert_eq!(
        c.authenticate(1_000 + GRACE, &tok(1)),
        AuthOutcome::Reused { generation: 0 }
    );
    assert!(c.is_revoked());
    // Every token of the chain is dead now, the current one too.
    assert_eq!(c.authenticate(1_000 + GRACE, &tok(3)), AuthOutcome::Revoked);
    assert_eq!(
        AuthOutcome::Revoked.error_code(),
        Some(ErrorCode::TokenRevoked)
    );
    assert_eq!(c.begin_rotation(&tok(4)), Err(ChainError::Revoked));
}

#[test]
fn presenting_the_pending_token_acknowledges_it() {
    let mut c = TokenChain::new(&tok(1), GRACE);
    let g = c.begin_rotation(&tok(2)).unwrap();
    assert_eq!(
        c.authenticate(5, &tok(2)),
        AuthOutcome::AcceptedPending { generation: g }
    );
    assert_eq!(c.pending(), Vec::<u64>::new());
    assert_eq!(
        c.acknowledge(6, g),
        Err(ChainError::NotPending),
        "already taken"
    );
    assert_eq!(
        c.authenticate(6, &tok(1)),
        AuthOutcome::AcceptedInGrace { generation: 0 }
    );
    assert_eq!(
        c.authenticate(5 + GRACE, &tok(1)),
        AuthOutcome::Reused { generation: 0 }
    );
}

#[test]
fn an_acknowledgement_takes_only_a_pending_generation_and_no_token_comes_back() {
    let mut c = TokenChain::new(&tok(1), GRACE);
    c.begin_rotation(&tok(2)).unwrap();
    c.begin_rotation(&tok(3)).unwrap();
    assert_eq!(c.acknowledge(0, 7), Err(ChainError::NotPending));
    c.acknowledge(0, 2).unwrap();
    assert_eq!(
        c.acknowledge(0, 1),
        Err(ChainError::NotPending),
        "given up when the later one was acknowledged"
    );
    assert_eq!(c.begin_rotation(&tok(1)), Err(ChainError::TokenReused));
}

/// Two connections of one chain (one the client has left, the service not
/// yet seen close) rotate on their timers a moment apart. The client,
/// reading the other, stores and acknowledges the first rotation: it must
/// stay the client's token, where the second used to give it up and lock
/// the client out at its next `auth`.
#[test]
fn the_earlier_of_two_waiting_rotations_can_be_acknowledged() {
    let mut c = TokenChain::new(&tok(1), GRACE);
    let first = c.begin_rotation(&tok(2)).unwrap();
    let second = c.begin_rotation(&tok(3)).unwrap();
    c.acknowledge(100, first).unwrap();
    assert_eq!(
        c.authenticate(200, &tok(2)),
        AuthOutcome::Accepted { generation: first }
    );
    // The later one still waits; a client that got it instead presents it.
    assert_eq!(c.pending(), vec![second]);
    assert_eq!(
        c.authenticate(300, &tok(3)),
        AuthOutcome::AcceptedPending { generation: second }
    );
    assert_eq!(
        c.authenticate(400, &tok(2)),
        AuthOutcome::AcceptedInGrace { generation: first }
    );
}

#[test]
fn past_the_limit_the_oldest_waiting_rotation_is_given_up() {
    let mut c = TokenChain::new(&tok(0), GRACE);
    for n in 1..=MAX_PENDING as u8 + 1 {
        c.begin_rotation(&tok(n)).unwrap();
    }
    let all: Vec<u64> = (2..=MAX_PENDING as u64 + 1).collect();
    assert_eq!(c.pending(), all);
    assert_eq!(c.authenticate(0, &tok(1)), AuthOutcome::Unknown);
    assert_eq!(c.acknowledge(0, 1), Err(ChainError::NotPending));
    // And the chain as stored loads again; one more waiting would not.
    let loaded = TokenChain::from_entries(c.entries().to_vec(), false, GRACE).unwrap();
    assert_eq!(loaded, c);
    assert_eq!(
        loaded_with(&c, 99, Standing::Pending),
        Err(ChainError::Inconsistent)
    );
}

/// `c` as stored, with one more entry of `generation` and `standing`,
/// loaded back.
fn loaded_with(
    c: &TokenChain,
    generation: u64,
    standing: Standing,
) -> Result<TokenChain, ChainError> {
    let mut entries = c.entries().to_vec();
    entries.push(ChainEntry {
        generation,
        hash: TokenHash::of(&tok(generation as u8)),
        standing,
    });
    TokenChain::from_entries(entries, false, GRACE)
}

#[test]
fn a_client_that_never_acknowledges_does_not_grow_its_chain() {
    let mut c = TokenChain::new(&tok(0), GRACE);
    for n in 1..=100u8 {
        c.begin_rotation(&tok(n)).unwrap();
    }
    assert!(c.entries().len() <= MAX_REMEMBERED + MAX_PENDING + 1);
    assert_eq!(
        c.authenticate(0, &tok(0)),
        AuthOutcome::Accepted { generation: 0 }
    );
}

#[test]
fn only_hashes_are_kept() {
    let secret = tok(9);
    let mut c = TokenChain::new(&secret, GRACE);
    c.begin_rotation(&tok(10)).unwrap();
    let shown = format!("{c:?}");
    assert!(!shown.contains(&secret.expose()[5..]), "{shown}");
    assert!(!shown.contains(&tok(10).expose()[5..]));
    assert!(c
        .entries()
        .iter()
        .all(|e| e.hash == TokenHash::of(&secret) || e.hash == TokenHash::of(&tok(10))));
}

#[test]
fn a_stored_chain_is_checked_when_loaded() {
    let c = TokenChain::new(&tok(1), GRACE);
    let ok = TokenChain::from_entries(c.entries().to_vec(), false, GRACE).unwrap();
    assert_eq!(ok, c);
    assert_eq!(
        loaded_with(&c, 2, Standing::Current),
        Err(ChainError::Inconsistent),
        "two current entries"
    );
    assert_eq!(
        TokenChain::from_entries(vec![], false, GRACE),
        Err(ChainError::Inconsistent)
    );
}

#[test]
fn old_entries_are_forgotten_past_the_limit() {
    let mut c = TokenChain::new(&tok(0), GRACE);
    for n in 1..=40u8 {
        let g = c.begin_rotation(&tok(n)).unwrap();
        c.acknowledge(u64::from(n), g).unwrap();
    }
    assert!(c.entries().len() <= MAX_REMEMBERED + 1);
    // The oldest is forgotten: unknown (refused) rather than reuse.
    assert_eq!(c.authenticate(10 * GRACE, &tok(0)), AuthOutcome::Unknown);
    assert!(!c.is_revoked());
    assert_eq!(
        c.authenticate(10 * GRACE, &tok(39)),
        AuthOutcome::Reused { generation: 39 }
    );
}

/// One step a client, a thief or the clock can take.
#[derive(Clone, Debug)]
enum Step {
    Wait(u64),
    Rotate,
    /// Acknowledge the `k`th waiting rotation (modulo how many wait).
    Ack(usize),
    /// Present the token of generation `k` back from the newest issued.
    Present(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0u64..3 * GRACE).prop_map(Step::Wait),
        Just(Step::Rotate),
        (0usize..4).prop_map(Step::Ack),
        (0usize..6).prop_map(Step::Present),
    ]
}

proptest! {
    /// Against a plain model of the rules: a token is accepted exactly when
    /// it is current, pending, or replaced less than the grace period ago;
    /// a replaced token past its grace revokes the chain; a pending token
    /// given up (an earlier one than a generation taken since, or the
    /// oldest past the limit) is refused; nothing is accepted once revoked.
    #[test]
    fn the_chain_follows_the_rules(steps in proptest::collection::vec(step(), 1..30)) {
        let mut c = TokenChain::new(&tok(0), GRACE);
        let mut issued: Vec<Token> = vec![tok(0)];
        // Model: generation → replaced-at time; current; pending.
        let mut replaced_at: Vec<Option<u64>> = vec![None];
        let mut current = 0usize;
        let mut pending: Vec<usize> = Vec::new();
        let mut abandoned: Vec<usize> = Vec::new();
        let mut revoked = false;
        let mut now = 0u64;
        for s in steps {
            match s {
                Step::Wait(ms) => now += ms,
                Step::Rotate => {
                    let n = u8::try_from(issued.len()).unwrap();
                    let r = c.begin_rotation(&tok(n));
                    if revoked {
                        prop_assert_eq!(r, Err(ChainError::Revoked));
                    } else {
                        if pending.len() == MAX_PENDING {
                            abandoned.push(pending.remove(0));
                        }
                        prop_assert_eq!(r, Ok(issued.len() as u64));
                        pending.push(issued.len());
                        issued.push(tok(n));
                        replaced_at.push(None);
                    }
                }
                Step::Ack(k) => {
                    let chosen = (!pending.is_empty()).then(|| pending[k % pending.len()]);
                    let r = c.acknowledge(now, chosen.map_or(999, |p| p as u64));
                    if revoked {
                        prop_assert_eq!(r, Err(ChainError::Revoked));
                    } else if let Some(p) = chosen {
                        prop_assert_eq!(r, Ok(()));
                        take(&mut pending, &mut abandoned, p);
                        replaced_at[current] = Some(now);
                        current = p;
                    } else {
                        prop_assert_eq!(r, Err(ChainError::NotPending));
                    }
                }
                Step::Present(back) => {
                    let g = issued.len().saturating_sub(1 + back);
                    let out = c.authenticate(now, &issued[g]);
                    let expected = if revoked {
                        AuthOutcome::Revoked
                    } else if g == current {
                        AuthOutcome::Accepted { generation: g as u64 }
                    } else if pending.contains(&g) {
                        take(&mut pending, &mut abandoned, g);
                        replaced_at[current] = Some(now);
                        current = g;
                        AuthOutcome::AcceptedPending { generation: g as u64 }
                    } else if abandoned.contains(&g) {
                        AuthOutcome::Unknown
                    } else if let Some(at) = replaced_at[g] {
                        if now < at + GRACE {
                            AuthOutcome::AcceptedInGrace { generation: g as u64 }
                        } else {
                            revoked = true;
                            AuthOutcome::Reused { generation: g as u64 }
                        }
                    } else {
                        unreachable!("every generation is current, pending, abandoned or replaced")
                    };
                    prop_assert_eq!(out, expected);
                }
            }
            prop_assert_eq!(c.is_revoked(), revoked);
        }
    }
}

/// The model's promotion of waiting generation `g`: it stops waiting, and
/// every one begun before it is given up.
fn take(pending: &mut Vec<usize>, abandoned: &mut Vec<usize>, g: usize) {
    abandoned.extend(pending.iter().copied().filter(|&p| p < g));
    pending.retain(|&p| p > g);
}
