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
login-error-network = Zu viele fehlgeschlagene Anmeldungen aus Ihrem Netzwerk. Melden Sie sich auf einem Gerät an, das Sie hier schon verwendet haben, wählen Sie einen anderen Anmeldeweg oder versuchen Sie es später erneut.
login-error-captcha-required = Zu viele fehlgeschlagene Anmeldungen aus Ihrem Netzwerk. Bestätigen Sie unten, dass Sie ein Mensch sind, und melden Sie sich dann an.
login-error-captcha = Die Prüfung, ob Sie ein Mensch sind, ist nicht gelungen. Bitte versuchen Sie es erneut.
error-internal-title = Etwas ist schiefgelaufen
error-internal = Die Anfrage konnte nicht abgeschlossen werden. Versuchen Sie es später noch einmal.

# Anmeldung bei einer App (Autorisierungsserver)
oauth-invalid-title = Diese Anmeldeanfrage ist ungültig
oauth-invalid = Die App, die Sie hierher geschickt hat, hat eine fehlerhafte Anfrage gestellt. Kehren Sie zur App zurück und versuchen Sie es erneut.
login-title = Bei { $tenant } anmelden
login-intro = Melden Sie sich an, um mit { $client } fortzufahren.
login-email-label = E-Mail-Adresse
login-password-label = Passwort
login-button = Anmelden
login-code-send = Code per E-Mail senden
login-error-credentials = Die E-Mail-Adresse oder das Passwort ist nicht richtig.
login-error-email = Geben Sie Ihre E-Mail-Adresse ein, zum Beispiel name@example.com.
login-error-unverified = Bestätigen Sie zuerst Ihre E-Mail-Adresse: Öffnen Sie den Link, den wir Ihnen geschickt haben, und melden Sie sich dann erneut an.
login-error-expired = Dieser Schritt ist abgelaufen. Melden Sie sich erneut an.
login-passkey-heading = Mit einem Passkey
login-passkey-button = Mit einem Passkey anmelden
login-passkey-failed = Die Anmeldung mit dem Passkey hat nicht geklappt. Versuchen Sie es erneut oder melden Sie sich anders an.
login-social-heading = Mit einem anderen Konto
login-social-button = Weiter mit { $provider }
login-social-failed = Die Anmeldung mit diesem Konto hat nicht geklappt. Versuchen Sie es erneut oder melden Sie sich anders an.
login-social-email-exists = Zu dieser E-Mail-Adresse gibt es schon ein Konto. Melden Sie sich zuerst auf anderem Weg dort an.
login-link-send = Anmeldelink per E-Mail senden
login-forgot-button = Passwort vergessen?
login-signup-button = Konto erstellen
link-sent-title = Sehen Sie in Ihr Postfach
link-sent = Wenn { $email } ein Konto hat, haben wir einen Anmeldelink dorthin gesendet. Öffnen Sie ihn in diesem Browser: Er gilt 10 Minuten.
forgot-sent-title = Prüfen Sie Ihre E-Mails
forgot-sent = Wenn { $email } ein Konto hat, haben wir einen Link gesendet, um ein neues Passwort zu wählen. Er funktioniert einmal, 1 Stunde lang; danach bringt er Sie zum Anmelden hierher zurück.
link-elsewhere-title = Öffnen Sie den Link im selben Browser
link-elsewhere = Dieser Anmeldelink funktioniert nur in dem Browser, in dem Sie ihn angefordert haben. Öffnen Sie ihn dort oder fordern Sie hier einen neuen an.
code-title = Code eingeben
code-intro = Wenn { $email } ein Konto hat, haben wir einen 6-stelligen Code dorthin gesendet. Der Code gilt 10 Minuten.
code-label = Code
code-button = Weiter
code-error = Der Code ist falsch oder abgelaufen.
mfa-title = Bestätigung in zwei Schritten
mfa-intro = Geben Sie den 6-stelligen Code aus Ihrer Authenticator-App oder einen Ihrer Wiederherstellungscodes ein.
mfa-error = Der Code ist falsch.
mfa-enrol-title = Richten Sie zuerst die Bestätigung in zwei Schritten ein
mfa-enrol = { $tenant } verlangt die Bestätigung in zwei Schritten. Richten Sie sie in der App von { $tenant } ein und melden Sie sich dann hier erneut an.

# Einwilligung
consent-title = { $client } möchte Ihr Konto bei { $tenant } verwenden
consent-intro = Wenn Sie es erlauben, kann { $client }:
consent-reconsent = Sie haben { $client } schon einmal etwas erlaubt. Jetzt bittet die App um mehr. Wenn Sie es erlauben, kann sie:
consent-unverified = { $tenant } hat { $client } nicht überprüft. Erlauben Sie es nur, wenn Sie die App kennen und ihr vertrauen.
consent-unchanged = { $scope } (bereits erlaubt)
consent-resource = Für: { $resource }
consent-optional = Sie können wählen, was Sie davon erlauben:
consent-allow = Erlauben
consent-deny = Ablehnen
scope-openid = Wissen, wer Sie sind
scope-profile = Ihren Namen sehen
scope-email = Ihre E-Mail-Adresse sehen
scope-phone = Ihre Telefonnummer sehen
scope-address = Ihre Postanschrift sehen
scope-offline_access = Zugriff behalten, auch wenn Sie die App nicht nutzen
scope-other = { $scope } verwenden

# Abmelden von einer App (RP-initiated logout)
logout-title = Von { $tenant } abmelden?
logout-intro = Möchten Sie sich in diesem Browser von { $tenant } abmelden?
logout-intro-client = { $client } möchte Sie von { $tenant } abmelden. Möchten Sie sich in diesem Browser abmelden?
logout-button = Abmelden
logout-done-title = Sie sind abgemeldet
logout-done = Sie sind in diesem Browser von { $tenant } abgemeldet. Sie können diese Seite schließen.
logout-invalid-title = Diese Abmeldeanfrage ist ungültig
logout-invalid = Die App, die Sie hierher geschickt hat, hat eine fehlerhafte Anfrage gestellt, daher wurde nichts geändert. Kehren Sie zur App zurück und versuchen Sie es erneut.

link-confirm-title = Ihr { $provider }-Konto verknüpfen
link-confirm-intro = Sie verknüpfen gleich ein { $provider }-Konto mit { $account }: Damit melden Sie sich dann auch bei { $account } an.
link-confirm-warning = Wenn Sie das nicht selbst in der App angefordert haben, schließen Sie diese Seite: Jemand versucht vielleicht, in Ihr Konto zu gelangen oder Sie in seines zu locken.
link-confirm-button = Weiter zu { $provider }

agent-request-title = { $agent } möchte für Sie handeln
agent-request-intro = { $agent } möchte bei { $tenant } in Ihrem Namen handeln. Wenn Sie zustimmen, kann er:
agent-request-binding = Stimmen Sie nur zu, wenn dort, wo Sie begonnen haben, dieselbe Nachricht angezeigt wird: { $message }
agent-request-approve = Zustimmen
agent-request-deny = Ablehnen
agent-request-approved-title = Zugestimmt
agent-request-approved = { $agent } darf jetzt für Sie handeln. Sie können dies jederzeit in Ihrem Konto widerrufen.
agent-request-denied-title = Abgelehnt
agent-request-denied = { $agent } wurde abgelehnt. Es wurde nichts geteilt.
agent-request-blocked-title = Sie haben diesen Agenten widerrufen
agent-request-blocked = Sie haben { $agent } zuvor widerrufen. Stellen Sie ihn zuerst in Ihrem Konto wieder her, wenn er wieder für Sie handeln soll.
agent-request-resource = Diese Berechtigungen gelten nur für { $resource }.
agent-request-unconfirmed-title = Bestätigen Sie zuerst Ihre E-Mail-Adresse
agent-request-unconfirmed = Die E-Mail-Adresse Ihres Kontos ist noch nicht bestätigt, daher können Sie keine Agenten zulassen. Folgen Sie dem Link in der Bestätigungs-E-Mail und öffnen Sie diese Anfrage dann erneut.
device-title = Gerät verbinden
device-intro = Geben Sie den Code ein, den Ihr Gerät anzeigt.
device-code-label = Code
device-code-button = Weiter
device-code-error = Dieser Code ist falsch oder abgelaufen. Prüfen Sie ihn und versuchen Sie es erneut.
device-signin-intro = Melden Sie sich bei { $tenant } an, um das Gerät zu verbinden.
device-confirm-check = Stimmen Sie nur zu, wenn Sie dies gerade auf Ihrem Gerät begonnen haben und es den Code { $code } anzeigt.
eudi-title = Mit Ihrer EU-Wallet anmelden
eudi-age-title = Ihr Alter mit Ihrer EU-Wallet nachweisen
eudi-scan = Scannen Sie diesen Code mit der Wallet-App auf Ihrem Telefon und folgen Sie deren Schritten.
eudi-same-device = Wallet auf diesem Gerät öffnen
eudi-expires = Dieser Code gilt noch { $minutes } Minuten. Kehren Sie zu { $tenant } zurück, wenn Ihre Wallet fertig ist.

guardian-consent-title = Einwilligung für das Konto eines Kindes
guardian-consent-intro = Das Konto { $child } bei { $tenant } gehört einer Person, die noch nicht allein einwilligen darf und Sie als Elternteil oder Sorgeberechtigte(n) genannt hat. { $controller } bittet um Ihre Einwilligung, ihre Daten zu verarbeiten.
guardian-consent-purposes = Die Daten würden verwendet für:
guardian-consent-details = Daten: { $categories }. Speicherung: { $retention }. Rechtsgrundlage: { $basis }.
guardian-consent-withdraw = Sie können Ihre Einwilligung jederzeit im Portal für Sorgeberechtigte widerrufen; das Konto funktioniert dann nicht mehr.
guardian-consent-attestation = Ich bin Elternteil oder gesetzlicher Vormund dieser Person
guardian-consent-attestation-missing = Kreuzen Sie das Feld an, um zu bestätigen, dass Sie Elternteil oder gesetzlicher Vormund dieser Person sind.
guardian-consent-accept = Ich willige ein
guardian-consent-decline = Ich lehne ab
guardian-accepted-title = Einwilligung erteilt
guardian-accepted = Das Konto { $child } kann jetzt benutzt werden. Im Portal für Sorgeberechtigte können Sie es verwalten oder Ihre Einwilligung widerrufen.
guardian-declined-title = Einwilligung abgelehnt
guardian-declined = Das Konto { $child } bleibt unbenutzbar, und seine Daten werden in 30 Tagen gelöscht.
guardian-portal-title = Portal für Sorgeberechtigte
guardian-portal-intro = Das Konto { $child } bei { $tenant } ist { $status }.
guardian-status-active = aktiv
guardian-status-held = in Erwartung der Einwilligung
guardian-status-blocked = gesperrt
guardian-portal-receipt = Sie haben am { $date } gegenüber { $controller } eingewilligt, für:
guardian-action-withdraw = Einwilligung widerrufen
guardian-action-export = Mir eine Kopie der Daten senden
guardian-action-delete = Konto löschen
guardian-delete-confirm = Das Löschen entfernt das Konto und seine Daten endgültig. Bestätigen Sie innerhalb von 10 Minuten.
guardian-action-delete-confirm = Ja, das Konto endgültig löschen
guardian-deleted-title = Konto gelöscht
guardian-deleted = Das Konto { $child } und seine Daten wurden gelöscht.
guardian-withdrawn = Einwilligung widerrufen: Das Konto kann nicht benutzt werden, und alle seine Sitzungen wurden beendet.
guardian-export-sent = Ein Download-Link für die Daten wurde an Ihre E-Mail-Adresse gesendet.
guardian-wallet-heading = Weisen Sie nach, dass Sie volljährig sind
guardian-wallet-button = Meine EU-Brieftasche für die digitale Identität verwenden
guardian-wallet-proven = Ihre EU-Brieftasche für die digitale Identität hat bestätigt, dass Sie volljährig sind.
error-guardian-pending-title = Warten auf die Einwilligung der Eltern
error-guardian-pending = Dieses Konto kann benutzt werden, sobald ein Elternteil oder Sorgeberechtigter einwilligt. Bitten Sie darum in der App: Sie erhalten eine E-Mail mit einem Link.
error-guardian-declined-title = Einwilligung abgelehnt
error-guardian-declined = Ein Elternteil oder Sorgeberechtigter hat die Einwilligung für dieses Konto abgelehnt; es kann nicht benutzt werden.
error-age-required-title = Legen Sie zuerst Ihr Konto an
error-age-required = { $tenant } schützt Minderjährige: Legen Sie Ihr Konto zuerst in der App mit Ihrem Geburtsdatum an.
error-email-unconfirmed-title = Bestätigen Sie zuerst Ihre E-Mail-Adresse
error-email-unconfirmed = Öffnen Sie den Bestätigungslink, den wir an Ihre E-Mail-Adresse gesendet haben, und versuchen Sie es dann erneut. Solange die Adresse nicht bestätigt ist, kann das Konto Apps keinen Zugriff gewähren und keine neuen Anmeldewege hinzufügen.

# Die Seiten des Dashboards (die Links in seinen E-Mails)
dashboard-error-summary = Es wurde nichts gespeichert. Prüfen Sie die unten markierten Felder.
dashboard-expired = Der Link ist abgelaufen, wurde schon verwendet oder gehört zu einem anderen Dashboard-Konto. Fordern Sie im Dashboard einen neuen an.
dashboard-verify-title = Dashboard-Adresse bestätigen
dashboard-verify-intro = Melden Sie sich mit Ihrem Tessera-Dashboard-Konto an, um zu bestätigen, dass diese Adresse Ihnen gehört. Der Link gilt nur zusammen mit dem Passwort des Kontos.
dashboard-verify-button = Meine Adresse bestätigen
dashboard-verify-done-title = Adresse bestätigt
dashboard-verify-done = Die Adresse Ihres Dashboard-Kontos ist bestätigt. Sie können jetzt Einladungen zu anderen Mandanten annehmen.
dashboard-forgot-title = Dashboard-Passwort zurücksetzen
dashboard-forgot-intro = Geben Sie die Adresse Ihres Tessera-Dashboard-Kontos ein. Wenn es ein Konto gibt, senden wir ihm einen Link, um ein neues Passwort zu wählen.
dashboard-forgot-button = Link per E-Mail senden
dashboard-forgot-done-title = Prüfen Sie Ihre E-Mails
dashboard-forgot-done = Wenn diese Adresse ein Dashboard-Konto hat, ist ein Link zum Wählen eines neuen Passworts unterwegs. Er funktioniert einmal, 1 Stunde lang.
dashboard-reset-title = Neues Dashboard-Passwort wählen
dashboard-reset-intro = Wählen Sie ein neues Passwort für Ihr Tessera-Dashboard-Konto. Jede Sitzung des Kontos wird beendet.
dashboard-reset-done-title = Passwort geändert
dashboard-reset-done = Ihr Dashboard-Passwort wurde geändert, und jede Sitzung des Kontos wurde beendet. Melden Sie sich mit dem neuen Passwort an.
dashboard-detached = Das Konto hatte seine Adresse nie bestätigt, daher hat das neue Passwort es übernommen. Es erreicht diese Mandanten nicht mehr, die angelegt hat, wer sich mit dieser Adresse registriert hatte:
dashboard-invite-title = Einladung annehmen
dashboard-invite-existing = Sie sind eingeladen, einen Mandanten bei Tessera als { $email } zu verwalten. Geben Sie zum Annehmen das Passwort Ihres Dashboard-Kontos ein.
dashboard-invite-new = Sie sind eingeladen, einen Mandanten bei Tessera als { $email } zu verwalten. Wählen Sie zum Annehmen ein Passwort für Ihr Dashboard-Konto.
dashboard-invite-button = Einladung annehmen
dashboard-invite-done-title = Einladung angenommen
dashboard-invite-done = Sie sind jetzt Mitglied von { $slug } mit der Rolle { $role }. Melden Sie sich beim Dashboard als { $email } an.
dashboard-invite-member = Dieses Konto ist bereits Mitglied dieses Mandanten.

# Die Mail-Ansicht für die Entwicklung (mail.dev_viewer)
dev-mail-title = Gesendete E-Mails (Entwicklung)
dev-mail-intro = Jede Nachricht, die der Datei-Transport geschrieben hat, die neueste zuerst. Diese Seite ist an, weil mail.dev_viewer gesetzt ist: Lassen Sie sie überall außer auf Ihrem eigenen Rechner aus.
dev-mail-empty = Es wurde noch keine E-Mail gesendet.
dev-mail-message-title = Eine gesendete Nachricht
dev-mail-to = An: { $value }
dev-mail-subject = Betreff: { $value }
dev-mail-date = Gesendet: { $value }
dev-mail-tenant = Mandant: { $value }
dev-mail-back = Zurück zur Liste
dev-mail-missing-title = Keine solche Nachricht
dev-mail-missing = Der Postausgang hat keine Nachricht dieses Namens. Gehen Sie zurück zur Liste.

# Registrierung auf der Anmeldeseite
signup-title = Ihr Konto bei { $tenant } erstellen
signup-intro = Wählen Sie ein Passwort für Ihr neues Konto. Wir senden Ihnen einen Link, um die Adresse zu bestätigen; er bringt Sie zum Anmelden hierher zurück.
signup-button = Konto erstellen
signup-dob-label = Geburtsdatum
signup-error-dob = Geben Sie Ihr Geburtsdatum ein, zum Beispiel 2010-04-30.
signup-consent = Ich stimme den Nutzungsbedingungen und der Datenschutzerklärung von { $tenant } zu
signup-error-consent = Kreuzen Sie das Feld an, um den Nutzungsbedingungen und der Datenschutzerklärung zuzustimmen.
signup-terms = Die Nutzungsbedingungen von { $tenant }
signup-privacy = Die Datenschutzerklärung von { $tenant }
signup-error-summary = Das Konto wurde nicht erstellt. Prüfen Sie die unten markierten Felder.
signup-back = Zurück zur Anmeldung
signup-sent-title = Bestätigen Sie Ihre E-Mail-Adresse
signup-sent = Wenn { $email } registriert werden kann, haben wir einen Link zur Bestätigung gesendet. Öffnen Sie den Link und melden Sie sich dann hier an.
