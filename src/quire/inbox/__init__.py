"""Forms (`inbox`): public submissions by form token, with attachments,
spam defences, events and notification e-mail."""
