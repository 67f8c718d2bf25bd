# Messages mailed to a tenant's end users. Every string a message shows comes from here.
# Variables: $tenant is the tenant's name (shown as written); $ending is the last two digits
# of a phone number; $hint is the app's description of what is being confirmed.
# A message is its subject and its paragraphs, in order; a "-button" is the label of the
# link's button in the HTML part (the text part shows the link alone on its line).

link-fallback = Or copy this link into your browser:
step-up-hint = You asked to confirm: { $hint }
step-up-warning = If you did not ask for this, do not act on it: do not use the code or the link, and do not pass them on. Someone may be trying to make a sensitive change to your account; change your password if you are worried.

verify-email-subject = Confirm your e-mail address for { $tenant }
verify-email-1 = Welcome to { $tenant }.
verify-email-2 = Confirm your e-mail address by opening this link (it works once, for 24 hours):
verify-email-button = Confirm my e-mail address
verify-email-3 = If you did not create an account with { $tenant }, ignore this message.

account-exists-subject = You already have an account at { $tenant }
account-exists-1 = Someone tried to create an account at { $tenant } with this e-mail address, but it already has one.
account-exists-2 = If it was you, sign in with your password, or choose a new one here (the link works once, for 1 hour):
account-exists-button = Reset my password
account-exists-3 = If it was not you, ignore this message: nothing has changed.

password-reset-subject = Reset your { $tenant } password
password-reset-1 = We received a request to reset your { $tenant } password.
password-reset-2 = Choose a new password by opening this link (it works once, for 1 hour):
password-reset-button = Choose a new password
password-reset-3 = If you did not ask, ignore this message; your password is unchanged.

password-changed-subject = Your { $tenant } password was changed
password-changed-1 = Your { $tenant } password was just changed.
password-changed-2 = If it was you, there is nothing to do.
password-changed-3 = If it was not you, reset your password at once from the { $tenant } sign-in page, and contact { $tenant }'s support.

invitation-subject = Your { $tenant } account is ready
invitation-1 = An account at { $tenant } was created for this e-mail address.
invitation-2 = Choose your password by opening this link (it works once, for 7 days):
invitation-button = Choose my password
invitation-3 = If you did not expect this, ignore this message: nobody can sign in with this address until a password is chosen through the link.
org-invitation-subject = Join { $organization } on { $tenant }
org-invitation-1 = You are invited to join { $organization } on { $tenant }.
org-invitation-2 = Accept the invitation by opening this link (it works once, for 7 days):
org-invitation-button = Accept the invitation
org-invitation-3 = If you did not expect this, ignore this message: nothing changes unless the link is used.

mfa-reset-subject = Two-step verification was reset on your { $tenant } account
mfa-reset-1 = An administrator of { $tenant } removed the authenticator app and the recovery codes from your account, as you or someone claiming to be you asked.
mfa-reset-2 = Set up two-step verification again from your account.
mfa-reset-3 = If you did not ask for this, reset your password at once from the { $tenant } sign-in page, and contact { $tenant }'s support.

phone-added-subject = A phone number was added to your { $tenant } account
phone-added-1 = The phone number ending in { $ending } was just confirmed on your { $tenant } account: codes texted to it now sign you in.
phone-added-2 = If it was you, there is nothing to do.
phone-added-3 = If it was not you, someone has access to your account: reset your password at once from the { $tenant } sign-in page, and contact { $tenant }'s support.

phone-removed-subject = Your phone number left your { $tenant } account
phone-removed-1 = The phone number ending in { $ending } was confirmed by another { $tenant } account, so it no longer signs in to yours.
phone-removed-2 = Phone numbers change hands; if this one is still yours, confirm it again from your account, and contact { $tenant }'s support.

magic-link-subject = Your sign-in link for { $tenant }
magic-link-1 = Sign in to { $tenant } by opening this link (it works once, for 10 minutes):
magic-link-button = Sign in
magic-link-2 = If you did not ask to sign in, ignore this message: nobody can sign in without the link.

email-otp-subject = Your { $tenant } sign-in code
email-otp-1 = Your { $tenant } sign-in code is:
email-otp-2 = It works once, for 10 minutes. Never share it: { $tenant } will not ask you for it. If you did not ask to sign in, ignore this message.

step-up-code-subject = Your { $tenant } security code
step-up-code-1 = Your { $tenant } security code is:
step-up-code-2 = It works once, for 5 minutes. Never share it: { $tenant } will not ask you for it.

step-up-link-subject = Confirm it is you at { $tenant }
step-up-link-1 = Confirm it is you at { $tenant }.
step-up-link-2 = Open this link on the device where you asked (it works once, for 10 minutes):
step-up-link-button = Confirm it is me

agent-request-subject = { $agent } asks to act for you at { $tenant }
agent-request-1 = { $agent }, an agent registered with { $tenant }, asks to act on your behalf.
agent-request-binding = Check that where you started, the same message is shown: { $hint }
agent-request-2 = Approve or deny the request by opening this link (it works for 5 minutes):
agent-request-button = Review the request
agent-request-3 = If you did not start anything with { $agent }, deny the request: nothing is shared with it unless you approve.

agent-revoked-subject = The agent { $agent } was revoked at { $tenant }
agent-revoked-1 = The agent { $agent } of { $tenant } was revoked from the dashboard: its secret no longer works, and every token it held has stopped working.
agent-revoked-2 = If no owner of { $tenant } did this, check the audit log and the members of { $tenant } at once.

webhook-disabled-subject = A webhook endpoint of { $tenant } was disabled
webhook-disabled-1 = The webhook endpoint { $endpoint } of { $tenant } failed every delivery for days, so it was disabled: no events are sent to it now.
webhook-disabled-2 = Fix the endpoint, enable it again from the dashboard, then resend the failed deliveries from its delivery log.

guardian-consent-subject = Your consent is asked for an account at { $tenant }
guardian-consent-1 = Someone registered an account at { $tenant } with the address { $hint }, said they are below the age at which they may consent alone, and named you as their parent or guardian.
guardian-consent-2 = Open this link to see what { $tenant } would process and to give or refuse your consent (it works once, for 7 days):
guardian-consent-button = Review the request
guardian-consent-3 = If you are not this person's parent or guardian, or you did not expect this message, do not consent: refuse, or ignore this message, and the account stays unusable.

guardian-portal-subject = Manage your child's account at { $tenant }
guardian-portal-1 = You asked to manage the account { $hint } at { $tenant }, for which you gave consent. Open this link to withdraw consent, get a copy of the data or delete the account (it works for one hour):
guardian-portal-button = Open the guardian portal
guardian-portal-2 = If you did not ask for this, ignore this message: nothing changes unless the link is used.

guardian-export-subject = The data of the account { $hint } at { $tenant }
guardian-export-1 = Here is the copy you asked for of the data { $tenant } holds about the account { $hint }. Download it with this link (it works for 24 hours):
guardian-export-button = Download the data
guardian-export-2 = The file holds personal data: keep it safe. If you did not ask for this copy, ignore this message and manage the account from the guardian portal.

# An address change
email-change-subject = Confirm your new e-mail address for { $tenant }
email-change-1 = Someone, probably you, asked to move a { $tenant } account to this address. Open this link to confirm it (it works once, for an hour):
email-change-button = Confirm the new address
email-change-2 = If it was not you, ignore this message: nothing changes.
email-change-asked-subject = Your { $tenant } e-mail address is about to change
email-change-asked-1 = Someone signed in to your { $tenant } account asked to move it to { $hint }.
email-change-asked-2 = It moves only once that address is confirmed.
email-change-asked-3 = If it was not you, change your password at once: that ends the request and signs everyone else out.
email-change-taken-subject = Your address was offered for another { $tenant } account
email-change-taken-1 = Someone asked to move a { $tenant } account to this address, which already has an account. Nothing was changed.
email-change-taken-2 = If it was you, sign in with this address instead. If not, ignore this message.
