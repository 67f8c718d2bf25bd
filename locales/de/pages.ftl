# Gehostete Seiten unter der Konten-URL. Jeder Text, den eine Seite zeigt, stammt von hier.
# Variablen: $tenant ist der Name des Anbieters (so angezeigt, wie er geschrieben ist); $min ist eine Zahl.

lang-name = Deutsch
page-footer = Diese Seite gehört zum Anmeldedienst von { $tenant }.
skip-to-content = Zum Inhalt springen

# Bestätigung der E-Mail-Adresse
verify-title = Bestätigen Sie Ihre E-Mail-Adresse
verify-intro = Bestätigen Sie, dass diese E-Mail-Adresse Ihnen gehört, um die Einrichtung Ihres Kontos bei { $tenant } abzuschließen.
verify-button = Meine Adresse bestätigen
verify-done-title = Adresse bestätigt
verify-done = Ihre E-Mail-Adresse ist bestätigt. Sie können sich jetzt bei { $tenant } anmelden.

# Passwort zurücksetzen
reset-title = Neues Passwort wählen
reset-intro = Wählen Sie ein neues Passwort für Ihr Konto bei { $tenant }. Alle angemeldeten Geräte werden abgemeldet.
reset-password-label = Neues Passwort
reset-password-hint = { $min } bis 128 Zeichen. Ein langer, leicht zu merkender Satz ist eine gute Wahl.
reset-confirm-label = Neues Passwort wiederholen
reset-button = Neues Passwort speichern
reset-error-length = Das Passwort muss { $min } bis 128 Zeichen lang sein.
reset-error-weak = Dieses Passwort ist zu verbreitet oder zu leicht zu erraten. Wählen Sie ein anderes.
reset-error-mismatch = Die beiden Passwörter stimmen nicht überein.
reset-error-summary = Das Passwort wurde nicht gespeichert. Prüfen Sie die markierten Felder.
reset-done-title = Passwort geändert
reset-done = Ihr Passwort wurde geändert, und alle angemeldeten Geräte wurden abgemeldet. Melden Sie sich mit Ihrem neuen Passwort bei { $tenant } an.

# Anmeldelink
magic-title = Bei { $tenant } anmelden
magic-intro = Klicken Sie auf die Schaltfläche, um sich in diesem Browser bei { $tenant } anzumelden.
magic-button = Bei { $tenant } anmelden
magic-unusable-title = Öffnen Sie diesen Link in der App
magic-unusable = Dieser Anmeldelink kann auf dieser Seite nicht verwendet werden. Öffnen Sie ihn in der App von { $tenant }, in der Sie ihn angefordert haben, oder fordern Sie dort einen neuen an.

# Link zur zusätzlichen Bestätigung (bestätigen, dass Sie es sind)
stepup-title = Bestätigen Sie, dass Sie es sind
stepup-intro = Kehren Sie zu { $tenant } zurück, um die Bestätigung abzuschließen. Verwenden Sie denselben Browser oder dasselbe Gerät, auf dem Sie diesen Link angefordert haben.
stepup-button = Zurück zu { $tenant }
stepup-unusable = Dieser Link kann nur in der App von { $tenant } verwendet werden, in der Sie ihn angefordert haben. Kopieren Sie ihn dorthin oder fordern Sie dort einen neuen an.

# Nach einer Aktion
continue = Weiter zu { $tenant }

# Fehler
error-expired-title = Dieser Link funktioniert nicht mehr
error-expired = Der Link ist abgelaufen oder wurde bereits verwendet. Fordern Sie bei { $tenant } einen neuen an.
error-invalid-title = Dieser Link ist ungültig
error-invalid = Der Link ist unvollständig oder wurde unterwegs verändert. Öffnen Sie ihn erneut aus der E-Mail oder fordern Sie einen neuen an.
error-csrf-title = Die Seite ist abgelaufen
error-csrf = Zu Ihrer Sicherheit konnte das Formular nicht gesendet werden. Öffnen Sie den Link aus der E-Mail erneut und versuchen Sie es noch einmal.
error-disabled-title = Anmeldelinks sind ausgeschaltet
error-disabled = { $tenant } nimmt derzeit keine Anmeldelinks an.
error-busy-title = Bitte versuchen Sie es gleich noch einmal
error-busy = Zu viele Versuche, oder der Dienst ist ausgelastet. Warten Sie eine Minute und versuchen Sie es erneut.
error-internal-title = Etwas ist schiefgelaufen
error-internal = Die Anfrage konnte nicht abgeschlossen werden. Versuchen Sie es später noch einmal.
