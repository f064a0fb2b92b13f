//! The rules of alert e-mail: each mail goes to one address and has its own fate. What
//! an SMTP answer means for that one mail, when a mail is tried again, and how many
//! address confirmations may be mailed.

use std::time::Duration;

/// Address confirmations mailed to one address in a day, across every project: an owner
/// cannot point confirmations at a stranger's mailbox more often than this.
pub const CONFIRMATIONS_PER_ADDRESS_PER_DAY: i64 = 3;
/// Address confirmations one project may have mailed in a day.
pub const CONFIRMATIONS_PER_PROJECT_PER_DAY: i64 = 20;
/// How long a confirmation link works.
pub const CONFIRMATION_LINK_HOURS: i64 = 24;

/// What became of one try to mail one address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MailOutcome {
    Sent,
    /// The server refused for good (a 5xx, or an address that cannot be written):
    /// the mail is failed and never tried again.
    Refused(String),
    /// The server answered "not now" (a 4xx): worth another try later.
    Later(String),
    /// No answer at all (no connection, a timeout): another try later, and the mail
    /// server, not the address, is what failed.
    Unreachable(String),
}

/// The outcome of a try the server answered with `code` (None: no answer at all, such
/// as a refused connection or a timeout) and `reply`.
pub fn classify(code: Option<u16>, reply: String) -> MailOutcome {
    match code {
        Some(500..=599) => MailOutcome::Refused(reply),
        Some(_) => MailOutcome::Later(reply),
        None => MailOutcome::Unreachable(reply),
    }
}

/// When a mail that failed its `tries`-th try (1 for the first) is tried again: the
/// schedule's step for that try, or None when the schedule is used up and the mail is
/// failed.
pub fn next_try(schedule: &[Duration], tries: i32) -> Option<Duration> {
    let step = usize::try_from(tries).ok()?.checked_sub(1)?;
    schedule.get(step).copied()
}

/// Why another confirmation may not be mailed now, given how many went out in the last
/// day to this address (from any project) and for this project.
pub fn confirmation_refused(to_address: i64, for_project: i64) -> Option<String> {
    if to_address >= CONFIRMATIONS_PER_ADDRESS_PER_DAY {
        Some(format!(
            "This address was sent {CONFIRMATIONS_PER_ADDRESS_PER_DAY} confirmation mails in \
             the last day, the most it gets: use the latest one, or try again tomorrow."
        ))
    } else if for_project >= CONFIRMATIONS_PER_PROJECT_PER_DAY {
        Some(format!(
            "This project sent {CONFIRMATIONS_PER_PROJECT_PER_DAY} confirmation mails in the \
             last day, the most it may: try again tomorrow."
        ))
    } else {
        None
    }
}

/// The confirmation mail: (subject, body), plain text with the link on a line of its own.
pub fn confirmation_mail(project: &str, link: &str) -> (String, String) {
    (
        format!("[Posthorn] Confirm alert e-mail for {project}"),
        format!(
            "Someone asked for Posthorn's alerts of the project \"{project}\" to be mailed \
             to this address.\n\nTo confirm, open this link within {CONFIRMATION_LINK_HOURS} \
             hours and press Confirm:\n\n{link}\n\nIf you did not ask for this, ignore this \
             mail: nothing more is sent to you unless the link is followed.\n"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_5xx_fails_the_mail_and_anything_else_is_tried_again() {
        assert!(matches!(
            classify(Some(550), "no".into()),
            MailOutcome::Refused(_)
        ));
        assert!(matches!(
            classify(Some(554), "no".into()),
            MailOutcome::Refused(_)
        ));
        assert!(matches!(
            classify(Some(451), "busy".into()),
            MailOutcome::Later(_)
        ));
        assert!(matches!(
            classify(Some(421), "bye".into()),
            MailOutcome::Later(_)
        ));
        assert!(matches!(
            classify(None, "connection refused".into()),
            MailOutcome::Unreachable(_)
        ));
    }

    #[test]
    fn tries_follow_the_schedule_and_then_stop() {
        let s = [Duration::from_secs(60), Duration::from_secs(300)];
        assert_eq!(next_try(&s, 1), Some(Duration::from_secs(60)));
        assert_eq!(next_try(&s, 2), Some(Duration::from_secs(300)));
        assert_eq!(next_try(&s, 3), None, "three tries in all, then failed");
        assert_eq!(next_try(&s, 0), None);
        assert_eq!(next_try(&[], 1), None);
    }

    #[test]
    fn confirmations_stop_at_the_address_limit_then_the_project_limit() {
        assert_eq!(confirmation_refused(0, 0), None);
        assert_eq!(confirmation_refused(2, 19), None);
        assert!(confirmation_refused(3, 0).unwrap().contains("This address"));
        assert!(confirmation_refused(0, 20)
            .unwrap()
            .contains("This project"));
    }

    #[test]
    fn the_confirmation_link_stands_on_a_line_of_its_own() {
        let (subject, body) = confirmation_mail("Shop", "https://p.example/alerts/confirm/abc");
        assert!(subject.contains("Shop"));
        assert!(body
            .lines()
            .any(|l| l == "https://p.example/alerts/confirm/abc"));
        assert!(body.is_ascii());
    }
}
