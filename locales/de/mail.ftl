# Nachrichten an die Endnutzer eines Anbieters. Jeder Text, den eine Nachricht zeigt, stammt von hier.
# Variablen: $tenant ist der Name des Anbieters (so angezeigt, wie er geschrieben ist); $ending sind die letzten zwei Ziffern
# einer Telefonnummer; $hint ist die Beschreibung der App, was bestätigt wird.
# Eine Nachricht besteht aus Betreff und Absätzen, in dieser Reihenfolge; ein „-button“ ist die Beschriftung der
# Schaltfläche des Links im HTML-Teil (der Textteil zeigt den Link allein in seiner Zeile).

link-fallback = Oder kopieren Sie diesen Link in Ihren Browser:
step-up-hint = Sie möchten Folgendes bestätigen: { $hint }
step-up-warning = Wenn Sie dies nicht angefordert haben, reagieren Sie nicht darauf: Verwenden Sie den Code oder den Link nicht und geben Sie sie nicht weiter. Möglicherweise versucht jemand, eine sensible Änderung an Ihrem Konto vorzunehmen; ändern Sie Ihr Passwort, wenn Sie besorgt sind.

verify-email-subject = Bestätigen Sie Ihre E-Mail-Adresse für { $tenant }
verify-email-1 = Willkommen bei { $tenant }.
verify-email-2 = Bestätigen Sie Ihre E-Mail-Adresse, indem Sie diesen Link öffnen (er funktioniert einmal, 24 Stunden lang):
verify-email-button = Meine E-Mail-Adresse bestätigen
verify-email-3 = Wenn Sie kein Konto bei { $tenant } erstellt haben, ignorieren Sie diese Nachricht.

account-exists-subject = Sie haben bereits ein Konto bei { $tenant }
account-exists-1 = Jemand hat versucht, mit dieser E-Mail-Adresse ein Konto bei { $tenant } zu erstellen, es gibt jedoch bereits eines.
account-exists-2 = Wenn Sie das waren, melden Sie sich mit Ihrem Passwort an oder wählen Sie hier ein neues (der Link funktioniert einmal, 1 Stunde lang):
account-exists-button = Mein Passwort zurücksetzen
account-exists-3 = Wenn Sie das nicht waren, ignorieren Sie diese Nachricht: Es hat sich nichts geändert.

password-reset-subject = Passwort für { $tenant } zurücksetzen
password-reset-1 = Wir haben eine Anfrage erhalten, Ihr Passwort bei { $tenant } zurückzusetzen.
password-reset-2 = Wählen Sie ein neues Passwort, indem Sie diesen Link öffnen (er funktioniert einmal, 1 Stunde lang):
password-reset-button = Neues Passwort wählen
password-reset-3 = Wenn Sie dies nicht angefordert haben, ignorieren Sie diese Nachricht; Ihr Passwort bleibt unverändert.

password-changed-subject = Ihr Passwort bei { $tenant } wurde geändert
password-changed-1 = Ihr Passwort bei { $tenant } wurde soeben geändert.
password-changed-2 = Wenn Sie das waren, müssen Sie nichts tun.
password-changed-3 = Wenn Sie das nicht waren, setzen Sie Ihr Passwort sofort über die Anmeldeseite von { $tenant } zurück und wenden Sie sich an den Support von { $tenant }.

invitation-subject = Ihr Konto bei { $tenant } ist bereit
invitation-1 = Für diese E-Mail-Adresse wurde ein Konto bei { $tenant } erstellt.
invitation-2 = Wählen Sie Ihr Passwort, indem Sie diesen Link öffnen (er funktioniert einmal, 7 Tage lang):
invitation-button = Mein Passwort wählen
invitation-3 = Wenn Sie dies nicht erwartet haben, ignorieren Sie diese Nachricht: Niemand kann sich mit dieser Adresse anmelden, bevor über den Link ein Passwort gewählt wurde.
org-invitation-subject = Treten Sie { $organization } bei { $tenant } bei
org-invitation-1 = Sie sind eingeladen, { $organization } bei { $tenant } beizutreten.
org-invitation-2 = Nehmen Sie die Einladung an, indem Sie diesen Link öffnen (er funktioniert einmal, 7 Tage lang):
org-invitation-button = Einladung annehmen
org-invitation-3 = Wenn Sie dies nicht erwartet haben, ignorieren Sie diese Nachricht: Nichts ändert sich, solange der Link nicht benutzt wird.

mfa-reset-subject = Die Zwei-Schritt-Verifizierung Ihres Kontos bei { $tenant } wurde zurückgesetzt
mfa-reset-1 = Ein Administrator von { $tenant } hat die Authenticator-App und die Wiederherstellungscodes aus Ihrem Konto entfernt, wie Sie oder jemand in Ihrem Namen es verlangt hat.
mfa-reset-2 = Richten Sie die Zwei-Schritt-Verifizierung in Ihrem Konto erneut ein.
mfa-reset-3 = Wenn Sie dies nicht verlangt haben, setzen Sie Ihr Passwort sofort über die Anmeldeseite von { $tenant } zurück und wenden Sie sich an den Support von { $tenant }.

phone-added-subject = Ihrem Konto bei { $tenant } wurde eine Telefonnummer hinzugefügt
phone-added-1 = Die Telefonnummer mit der Endung { $ending } wurde soeben für Ihr Konto bei { $tenant } bestätigt: Per SMS an sie gesendete Codes melden Sie nun an.
phone-added-2 = Wenn Sie das waren, müssen Sie nichts tun.
phone-added-3 = Wenn Sie das nicht waren, hat jemand Zugriff auf Ihr Konto: Setzen Sie Ihr Passwort sofort über die Anmeldeseite von { $tenant } zurück und wenden Sie sich an den Support von { $tenant }.

phone-removed-subject = Ihre Telefonnummer gehört nicht mehr zu Ihrem Konto bei { $tenant }
phone-removed-1 = Die Telefonnummer mit der Endung { $ending } wurde von einem anderen Konto bei { $tenant } bestätigt und meldet daher nicht mehr bei Ihrem an.
phone-removed-2 = Telefonnummern wechseln den Besitzer; wenn diese noch Ihnen gehört, bestätigen Sie sie in Ihrem Konto erneut und wenden Sie sich an den Support von { $tenant }.

magic-link-subject = Ihr Anmeldelink für { $tenant }
magic-link-1 = Melden Sie sich bei { $tenant } an, indem Sie diesen Link öffnen (er funktioniert einmal, 10 Minuten lang):
magic-link-button = Anmelden
magic-link-2 = Wenn Sie sich nicht anmelden wollten, ignorieren Sie diese Nachricht: Ohne den Link kann sich niemand anmelden.

email-otp-subject = Ihr Anmeldecode für { $tenant }
email-otp-1 = Ihr Anmeldecode für { $tenant } lautet:
email-otp-2 = Er funktioniert einmal, 10 Minuten lang. Geben Sie ihn niemals weiter: { $tenant } wird Sie nie danach fragen. Wenn Sie sich nicht anmelden wollten, ignorieren Sie diese Nachricht.

step-up-code-subject = Ihr Sicherheitscode für { $tenant }
step-up-code-1 = Ihr Sicherheitscode für { $tenant } lautet:
step-up-code-2 = Er funktioniert einmal, 5 Minuten lang. Geben Sie ihn niemals weiter: { $tenant } wird Sie nie danach fragen.

step-up-link-subject = Bestätigen Sie bei { $tenant }, dass Sie es sind
step-up-link-1 = Bestätigen Sie bei { $tenant }, dass Sie es sind.
step-up-link-2 = Öffnen Sie diesen Link auf dem Gerät, auf dem Sie ihn angefordert haben (er funktioniert einmal, 10 Minuten lang):
step-up-link-button = Ja, das bin ich

agent-request-subject = { $agent } möchte bei { $tenant } für Sie handeln
agent-request-1 = { $agent }, ein bei { $tenant } registrierter Agent, bittet darum, in Ihrem Namen zu handeln.
agent-request-binding = Prüfen Sie, dass dort, wo Sie begonnen haben, dieselbe Nachricht angezeigt wird: { $hint }
agent-request-2 = Genehmigen oder ablehnen Sie die Anfrage über diesen Link (gültig für 5 Minuten):
agent-request-button = Anfrage prüfen
agent-request-3 = Wenn Sie nichts mit { $agent } begonnen haben, lehnen Sie die Anfrage ab: Ohne Ihre Zustimmung wird nichts geteilt.

agent-revoked-subject = Der Agent { $agent } wurde bei { $tenant } widerrufen
agent-revoked-1 = Der Agent { $agent } von { $tenant } wurde im Dashboard widerrufen: Sein Geheimnis funktioniert nicht mehr, und alle seine Tokens sind ungültig.
agent-revoked-2 = Wenn kein Eigentümer von { $tenant } dies getan hat, prüfen Sie sofort das Audit-Protokoll und die Mitglieder von { $tenant }.

webhook-disabled-subject = Ein Webhook-Endpunkt von { $tenant } wurde deaktiviert
webhook-disabled-1 = Der Webhook-Endpunkt { $endpoint } von { $tenant } hat tagelang jede Zustellung abgelehnt und wurde deshalb deaktiviert: Es werden keine Ereignisse mehr an ihn gesendet.
webhook-disabled-2 = Beheben Sie das Problem am Endpunkt, aktivieren Sie ihn im Dashboard wieder und senden Sie die fehlgeschlagenen Zustellungen aus seinem Zustellprotokoll erneut.

guardian-consent-subject = Ihre Einwilligung für ein Konto bei { $tenant } wird erbeten
guardian-consent-1 = Jemand hat bei { $tenant } ein Konto mit der Adresse { $hint } angelegt, angegeben, noch nicht allein einwilligen zu dürfen, und Sie als Elternteil oder Sorgeberechtigte(n) genannt.
guardian-consent-2 = Öffnen Sie diesen Link, um zu sehen, welche Daten { $tenant } verarbeiten würde, und um einzuwilligen oder abzulehnen (er gilt einmal, 7 Tage lang):
guardian-consent-button = Anfrage ansehen
guardian-consent-3 = Wenn Sie nicht Elternteil oder sorgeberechtigt für diese Person sind oder diese Nachricht nicht erwartet haben, willigen Sie nicht ein: Lehnen Sie ab oder ignorieren Sie diese Nachricht, dann bleibt das Konto unbenutzbar.

guardian-portal-subject = Das Konto Ihres Kindes bei { $tenant } verwalten
guardian-portal-1 = Sie möchten das Konto { $hint } bei { $tenant } verwalten, für das Sie eingewilligt haben. Öffnen Sie diesen Link, um die Einwilligung zu widerrufen, eine Kopie der Daten zu erhalten oder das Konto zu löschen (er gilt eine Stunde):
guardian-portal-button = Portal für Sorgeberechtigte öffnen
guardian-portal-2 = Wenn Sie das nicht angefordert haben, ignorieren Sie diese Nachricht: Nichts ändert sich, solange der Link nicht benutzt wird.

guardian-export-subject = Die Daten des Kontos { $hint } bei { $tenant }
guardian-export-1 = Hier ist die angeforderte Kopie der Daten, die { $tenant } zum Konto { $hint } speichert. Laden Sie sie mit diesem Link herunter (er gilt 24 Stunden):
guardian-export-button = Daten herunterladen
guardian-export-2 = Die Datei enthält personenbezogene Daten: Bewahren Sie sie sicher auf. Wenn Sie diese Kopie nicht angefordert haben, ignorieren Sie diese Nachricht und verwalten Sie das Konto im Portal für Sorgeberechtigte.

# An address change
email-change-subject = Bestätigen Sie Ihre neue E-Mail-Adresse für { $tenant }
email-change-1 = Jemand, wahrscheinlich Sie, möchte ein Konto bei { $tenant } auf diese Adresse umstellen. Öffnen Sie diesen Link, um das zu bestätigen (er funktioniert einmal, eine Stunde lang):
email-change-button = Neue Adresse bestätigen
email-change-2 = Wenn Sie das nicht waren, ignorieren Sie diese Nachricht: Es ändert sich nichts.
email-change-asked-subject = Ihre E-Mail-Adresse bei { $tenant } soll geändert werden
email-change-asked-1 = Jemand, der in Ihrem Konto bei { $tenant } angemeldet ist, möchte es auf { $hint } umstellen.
email-change-asked-2 = Die Umstellung erfolgt erst, wenn diese Adresse bestätigt ist.
email-change-asked-3 = Wenn Sie das nicht waren, ändern Sie sofort Ihr Passwort: Das beendet die Anfrage und meldet alle anderen ab.
email-change-taken-subject = Ihre Adresse wurde für ein anderes Konto bei { $tenant } angegeben
email-change-taken-1 = Jemand möchte ein Konto bei { $tenant } auf diese Adresse umstellen, für die es bereits ein Konto gibt. Es wurde nichts geändert.
email-change-taken-2 = Wenn Sie das waren, melden Sie sich stattdessen mit dieser Adresse an. Wenn nicht, ignorieren Sie diese Nachricht.
