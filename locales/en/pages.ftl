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
error-internal-title = Something went wrong
error-internal = The request could not be completed. Try again later.
