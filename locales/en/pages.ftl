# Hosted pages at the accounts URL. Every string a page shows comes from here.
# Variables: $tenant is the tenant's name (shown as written); $min is a number.

lang-name = English
page-footer = This page belongs to { $tenant }'s sign-in service.
skip-to-content = Skip to the content

# E-mail address confirmation
verify-title = Confirm your e-mail address
verify-intro = Confirm that this e-mail address is yours to finish setting up your { $tenant } account.
verify-button = Confirm my address
verify-done-title = Address confirmed
verify-done = Your e-mail address is confirmed. You can now sign in to { $tenant }.

# Password reset
reset-title = Choose a new password
reset-intro = Choose a new password for your { $tenant } account. Every device signed in to the account will be signed out.
reset-password-label = New password
reset-password-hint = { $min } to 128 characters. A long phrase that is easy to remember is a good choice.
reset-confirm-label = New password again
reset-button = Save the new password
reset-error-length = The password must be { $min } to 128 characters long.
reset-error-weak = This password is too common or too easy to guess. Choose another one.
reset-error-mismatch = The two passwords are not the same.
reset-error-summary = The password was not saved. Check the fields marked below.
reset-done-title = Password changed
reset-done = Your password was changed, and every device signed in to your account was signed out. Sign in to { $tenant } with your new password.

# Sign-in link
magic-title = Sign in to { $tenant }
magic-intro = Press the button to sign in to { $tenant } in this browser.
magic-button = Sign in to { $tenant }
magic-unusable-title = Open this link in the app
magic-unusable = This sign-in link cannot be used on this page. Open it from the { $tenant } app where you asked for it, or ask for a new link there.

# Step-up (confirming it is you) link
stepup-title = Confirm it is you
stepup-intro = Go back to { $tenant } to finish confirming that it is you. Use the same browser or device where you asked for this link.
stepup-button = Go back to { $tenant }
stepup-unusable = This link can only be used in the { $tenant } app where you asked for it. Copy it into that app, or ask for a new one there.

# After an action
continue = Continue to { $tenant }

# Errors
error-expired-title = This link no longer works
error-expired = The link has expired or was already used. Ask { $tenant } for a new one.
error-invalid-title = This link is not valid
error-invalid = The link is incomplete or was changed on the way. Open it again from the e-mail, or ask for a new one.
error-csrf-title = The page has expired
error-csrf = For your safety, the form could not be sent. Open the link from the e-mail again and try once more.
error-disabled-title = Sign-in links are turned off
error-disabled = { $tenant } does not accept sign-in links at the moment.
error-busy-title = Please try again in a moment
error-busy = Too many attempts, or the service is busy. Wait a minute and try again.
login-error-network = Too many failed sign-ins from your network. Sign in on a device you have used here before, use another way to sign in, or try again later.
login-error-captcha-required = Too many failed sign-ins from your network. Confirm below that you are a person, then sign in.
login-error-captcha = The check that you are a person did not pass. Please try it again.
error-internal-title = Something went wrong
error-internal = The request could not be completed. Try again later.

# Signing in to an app (the authorization server)
oauth-invalid-title = This sign-in request is not valid
oauth-invalid = The app that sent you here made a mistake in its request. Go back to the app and try again.
login-title = Sign in to { $tenant }
login-intro = Sign in to continue to { $client }.
login-email-label = E-mail address
login-password-label = Password
login-button = Sign in
login-code-send = E-mail me a code
login-error-credentials = The e-mail address or the password is not right.
login-error-email = Enter your e-mail address, like name@example.com.
login-error-unverified = Confirm your e-mail address first: open the link we sent you, then sign in again.
login-error-expired = That step has expired. Sign in again.
login-passkey-heading = With a passkey
login-passkey-button = Sign in with a passkey
login-passkey-failed = The passkey did not sign you in. Try again, or sign in another way.
login-social-heading = With another account
login-social-button = Continue with { $provider }
login-social-failed = Signing in with that account did not work. Try again, or sign in another way.
login-social-email-exists = An account with this e-mail address already exists. Sign in to it another way first.
login-link-send = E-mail me a sign-in link
login-forgot-button = Forgot your password?
login-signup-button = Create an account
link-sent-title = Check your e-mail
link-sent = If { $email } has an account, we have sent it a sign-in link. Open it in this browser: it works for 10 minutes.
forgot-sent-title = Check your e-mail
forgot-sent = If { $email } has an account, we have sent it a link to choose a new password. It works once, for 1 hour; then it brings you back here to sign in.
link-elsewhere-title = Open the link in the same browser
link-elsewhere = This sign-in link finishes only in the browser where you asked for it. Open it there, or ask for a new one here.
code-title = Enter the code
code-intro = If { $email } has an account, we have sent it a 6-digit code. The code works for 10 minutes.
code-label = Code
code-button = Continue
code-error = The code is not right or has expired.
mfa-title = Two-step verification
mfa-intro = Enter the 6-digit code from your authenticator app, or one of your recovery codes.
mfa-error = The code is not right.
mfa-enrol-title = Set up two-step verification first
mfa-enrol = { $tenant } requires two-step verification. Set it up in the { $tenant } app, then sign in here again.

# Consent
consent-title = { $client } wants to use your { $tenant } account
consent-intro = If you allow it, { $client } will be able to:
consent-reconsent = You have allowed { $client } before. It now asks for more. If you allow it, it will be able to:
consent-unverified = { $tenant } has not verified { $client }. Allow it only if you know and trust it.
consent-unchanged = { $scope } (already allowed)
consent-resource = For: { $resource }
consent-optional = You can choose which of these to allow:
consent-allow = Allow
consent-deny = Deny
scope-openid = Know who you are
scope-profile = See your name
scope-email = See your e-mail address
scope-phone = See your phone number
scope-address = See your postal address
scope-offline_access = Keep access while you are not using it
scope-other = Use { $scope }

# Signing out of an app (RP-initiated logout)
logout-title = Sign out of { $tenant }?
logout-intro = Do you want to sign out of { $tenant } in this browser?
logout-intro-client = { $client } asks to sign you out of { $tenant }. Do you want to sign out in this browser?
logout-button = Sign out
logout-done-title = You are signed out
logout-done = You are signed out of { $tenant } in this browser. You can close this page.
logout-invalid-title = This sign-out request is not valid
logout-invalid = The app that sent you here made a mistake in its request, so nothing was changed. Go back to the app and try again.

link-confirm-title = Link your { $provider } account
link-confirm-intro = You are about to link a { $provider } account to { $account }: it will then sign in to { $account } too.
link-confirm-warning = If you did not ask for this in the app yourself, close this page: someone may be trying to get into your account, or to have you sign in to theirs.
link-confirm-button = Continue to { $provider }

agent-request-title = { $agent } asks to act for you
agent-request-intro = { $agent } asks to act on your behalf at { $tenant }. If you approve, it will be able to:
agent-request-binding = Approve only if where you started, the same message is shown: { $message }
agent-request-approve = Approve
agent-request-deny = Deny
agent-request-approved-title = Approved
agent-request-approved = { $agent } may now act for you. You can withdraw this at any time from your account.
agent-request-denied-title = Denied
agent-request-denied = { $agent } was refused. Nothing was shared with it.
agent-request-blocked-title = You revoked this agent
agent-request-blocked = You revoked { $agent } before. Restore it from your account first if you want it to act for you again.
agent-request-resource = These permissions are for { $resource } only.
agent-request-unconfirmed-title = Confirm your e-mail address first
agent-request-unconfirmed = Your account's e-mail address is not confirmed yet, so it cannot approve agents. Follow the link in the verification e-mail, then open this request again.
device-title = Connect a device
device-intro = Enter the code your device shows.
device-code-label = Code
device-code-button = Continue
device-code-error = That code is not right or has expired. Check it and try again.
device-signin-intro = Sign in to { $tenant } to connect the device.
device-confirm-check = Approve only if you just started this on your device and it shows the code { $code }.
eudi-title = Sign in with your EU wallet
eudi-age-title = Prove your age with your EU wallet
eudi-scan = Scan this code with the wallet app on your phone, then follow its steps.
eudi-same-device = Open the wallet on this device
eudi-expires = This code works for { $minutes } more minutes. Return to { $tenant } when your wallet is done.

guardian-consent-title = Consent for a child's account
guardian-consent-intro = The account { $child } at { $tenant } belongs to someone below the age at which they may consent alone, who named you as their parent or guardian. { $controller } asks for your consent to process their data.
guardian-consent-purposes = The data would be used for:
guardian-consent-details = Data: { $categories }. Kept: { $retention }. Legal basis: { $basis }.
guardian-consent-withdraw = You can withdraw your consent at any time from the guardian portal; the account then stops working.
guardian-consent-attestation = I am this person's parent or legal guardian
guardian-consent-attestation-missing = Tick the box to confirm that you are this person's parent or legal guardian.
guardian-consent-accept = I consent
guardian-consent-decline = I refuse
guardian-accepted-title = Consent given
guardian-accepted = The account { $child } can now be used. You can manage it, or withdraw your consent, from the guardian portal.
guardian-declined-title = Consent refused
guardian-declined = The account { $child } stays unusable, and its data will be deleted in 30 days.
guardian-portal-title = Guardian portal
guardian-portal-intro = The account { $child } at { $tenant } is { $status }.
guardian-status-active = active
guardian-status-held = waiting for consent
guardian-status-blocked = blocked
guardian-portal-receipt = You gave consent on { $date } to { $controller }, for:
guardian-action-withdraw = Withdraw consent
guardian-action-export = E-mail me a copy of the data
guardian-action-delete = Delete the account
guardian-delete-confirm = Deleting the account erases it and its data for good. Confirm within 10 minutes.
guardian-action-delete-confirm = Yes, delete the account for good
guardian-deleted-title = Account deleted
guardian-deleted = The account { $child } and its data were deleted.
guardian-withdrawn = Consent withdrawn: the account cannot be used, and every session of it has ended.
guardian-export-sent = A download link for the data was sent to your e-mail address.
guardian-wallet-heading = Prove that you are an adult
guardian-wallet-button = Use my EU digital identity wallet
guardian-wallet-proven = Your EU digital identity wallet proved that you are an adult.
error-guardian-pending-title = Waiting for a parent's consent
error-guardian-pending = This account can be used once a parent or guardian consents. Ask them from the app: they get an e-mail with a link.
error-guardian-declined-title = Consent refused
error-guardian-declined = A parent or guardian refused consent for this account, so it cannot be used.
error-age-required-title = Create your account first
error-age-required = { $tenant } protects minors: create your account in the app with your date of birth first.
error-email-unconfirmed-title = Confirm your e-mail address first
error-email-unconfirmed = Open the confirmation link we sent to your e-mail address, then try again. Until the address is confirmed, the account cannot give apps access or add new ways to sign in.

# The dashboard's own pages (the links in the dashboard's mails)
dashboard-error-summary = Nothing was saved. Check the fields marked below.
dashboard-expired = The link has expired, was already used, or belongs to another dashboard account. Ask for a new one from the dashboard.
dashboard-verify-title = Confirm your dashboard address
dashboard-verify-intro = Sign in with your Tessera dashboard account to confirm that this address is yours. The link counts only together with the account's own password.
dashboard-verify-button = Confirm my address
dashboard-verify-done-title = Address confirmed
dashboard-verify-done = Your dashboard address is confirmed. You can now accept invitations to other tenants.
dashboard-forgot-title = Reset your dashboard password
dashboard-forgot-intro = Enter the address of your Tessera dashboard account. If it has one, we e-mail it a link to choose a new password.
dashboard-forgot-button = E-mail me a link
dashboard-forgot-done-title = Check your e-mail
dashboard-forgot-done = If that address has a dashboard account, a link to choose a new password is on its way. It works once, for 1 hour.
dashboard-reset-title = Choose a new dashboard password
dashboard-reset-intro = Choose a new password for your Tessera dashboard account. Every session of the account will end.
dashboard-reset-done-title = Password changed
dashboard-reset-done = Your dashboard password was changed, and every session of the account has ended. Sign in with the new password.
dashboard-detached = The account had never confirmed its address, so the new password took it over. It no longer reaches these tenants, which whoever signed up with this address created:
dashboard-invite-title = Accept your invitation
dashboard-invite-existing = You are invited to administer a tenant on Tessera as { $email }. Enter the password of your dashboard account to accept.
dashboard-invite-new = You are invited to administer a tenant on Tessera as { $email }. Choose a password for your dashboard account to accept.
dashboard-invite-button = Accept the invitation
dashboard-invite-done-title = Invitation accepted
dashboard-invite-done = You are now a member of { $slug } as { $role }. Sign in to the dashboard as { $email }.
dashboard-invite-member = This account is already a member of that tenant.

# The development mail viewer (mail.dev_viewer)
dev-mail-title = Mail sent (development)
dev-mail-intro = Every message the file transport wrote, newest first. This page is on because mail.dev_viewer is set: keep it off anywhere but on your own machine.
dev-mail-empty = No mail has been sent yet.
dev-mail-message-title = A sent message
dev-mail-to = To: { $value }
dev-mail-subject = Subject: { $value }
dev-mail-date = Sent: { $value }
dev-mail-tenant = Tenant: { $value }
dev-mail-back = Back to the list
dev-mail-missing-title = No such message
dev-mail-missing = The outbox has no message of that name. Go back to the list.

# Sign-up on the sign-in page
signup-title = Create your { $tenant } account
signup-intro = Choose a password for your new account. We e-mail you a link to confirm the address; it brings you back here to sign in.
signup-button = Create the account
signup-dob-label = Date of birth
signup-error-dob = Enter your date of birth, like 2010-04-30.
signup-consent = I agree to the terms and the privacy policy of { $tenant }
signup-error-consent = Tick the box to agree to the terms and the privacy policy.
signup-terms = The terms of { $tenant }
signup-privacy = The privacy policy of { $tenant }
signup-error-summary = The account was not created. Check the fields marked below.
signup-back = Back to signing in
signup-sent-title = Confirm your e-mail address
signup-sent = If { $email } can be registered, we have sent it a link to confirm it. Open the link, then sign in here.
