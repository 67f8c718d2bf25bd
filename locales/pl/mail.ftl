# Wiadomości wysyłane do użytkowników końcowych serwisu. Stąd pochodzi każdy tekst wiadomości.
# Zmienne: $tenant to nazwa serwisu (wyświetlana bez zmian); $ending to dwie ostatnie cyfry
# numeru telefonu; $hint to opis z aplikacji, czego dotyczy potwierdzenie.
# Wiadomość to jej temat i akapity, w tej kolejności; „-button” to etykieta przycisku
# z linkiem w części HTML (część tekstowa pokazuje sam link w osobnym wierszu).

link-fallback = Możesz też skopiować ten link do przeglądarki:
step-up-hint = Prosisz o potwierdzenie: { $hint }
step-up-warning = Jeśli to nie Ty o to prosiłeś, nie reaguj: nie używaj kodu ani linku i nikomu ich nie przekazuj. Ktoś może próbować wprowadzić ważną zmianę na Twoim koncie; jeśli się niepokoisz, zmień hasło.

verify-email-subject = Potwierdź adres e-mail w serwisie { $tenant }
verify-email-1 = Witamy w serwisie { $tenant }.
verify-email-2 = Potwierdź swój adres e-mail, otwierając ten link (działa jeden raz, przez 24 godziny):
verify-email-button = Potwierdź mój adres e-mail
verify-email-3 = Jeśli nie zakładałeś konta w serwisie { $tenant }, zignoruj tę wiadomość.

account-exists-subject = Masz już konto w serwisie { $tenant }
account-exists-1 = Ktoś próbował założyć konto w serwisie { $tenant } z tym adresem e-mail, ale to konto już istnieje.
account-exists-2 = Jeśli to byłeś Ty, zaloguj się swoim hasłem albo wybierz tutaj nowe (link działa jeden raz, przez 1 godzinę):
account-exists-button = Zresetuj moje hasło
account-exists-3 = Jeśli to nie byłeś Ty, zignoruj tę wiadomość: nic się nie zmieniło.

password-reset-subject = Zresetuj hasło w serwisie { $tenant }
password-reset-1 = Otrzymaliśmy prośbę o zresetowanie Twojego hasła w serwisie { $tenant }.
password-reset-2 = Wybierz nowe hasło, otwierając ten link (działa jeden raz, przez 1 godzinę):
password-reset-button = Wybierz nowe hasło
password-reset-3 = Jeśli to nie Ty prosiłeś, zignoruj tę wiadomość; Twoje hasło się nie zmieniło.

password-changed-subject = Twoje hasło w serwisie { $tenant } zostało zmienione
password-changed-1 = Twoje hasło w serwisie { $tenant } zostało właśnie zmienione.
password-changed-2 = Jeśli to byłeś Ty, nie musisz nic robić.
password-changed-3 = Jeśli to nie byłeś Ty, natychmiast zresetuj hasło na stronie logowania serwisu { $tenant } i skontaktuj się z pomocą techniczną serwisu { $tenant }.

invitation-subject = Twoje konto w serwisie { $tenant } jest gotowe
invitation-1 = Dla tego adresu e-mail założono konto w serwisie { $tenant }.
invitation-2 = Wybierz hasło, otwierając ten link (działa jeden raz, przez 7 dni):
invitation-button = Wybierz moje hasło
invitation-3 = Jeśli się tego nie spodziewałeś, zignoruj tę wiadomość: nikt nie zaloguje się tym adresem, dopóki przez link nie zostanie wybrane hasło.
org-invitation-subject = Dołącz do { $organization } w serwisie { $tenant }
org-invitation-1 = Zaproszono Cię do organizacji { $organization } w serwisie { $tenant }.
org-invitation-2 = Przyjmij zaproszenie, otwierając ten link (działa jeden raz, przez 7 dni):
org-invitation-button = Przyjmij zaproszenie
org-invitation-3 = Jeśli się tego nie spodziewałeś, zignoruj tę wiadomość: nic się nie zmieni, dopóki link nie zostanie użyty.

mfa-reset-subject = Weryfikacja dwuetapowa Twojego konta w serwisie { $tenant } została zresetowana
mfa-reset-1 = Administrator serwisu { $tenant } usunął z Twojego konta aplikację uwierzytelniającą i kody odzyskiwania, zgodnie z prośbą Twoją lub osoby podającej się za Ciebie.
mfa-reset-2 = Skonfiguruj ponownie weryfikację dwuetapową na swoim koncie.
mfa-reset-3 = Jeśli to nie Ty o to prosiłeś, natychmiast zresetuj hasło na stronie logowania serwisu { $tenant } i skontaktuj się z pomocą techniczną serwisu { $tenant }.

phone-added-subject = Do Twojego konta w serwisie { $tenant } dodano numer telefonu
phone-added-1 = Numer telefonu kończący się na { $ending } został właśnie potwierdzony na Twoim koncie w serwisie { $tenant }: kody wysyłane SMS-em na ten numer logują Cię teraz.
phone-added-2 = Jeśli to byłeś Ty, nie musisz nic robić.
phone-added-3 = Jeśli to nie byłeś Ty, ktoś ma dostęp do Twojego konta: natychmiast zresetuj hasło na stronie logowania serwisu { $tenant } i skontaktuj się z pomocą techniczną serwisu { $tenant }.

phone-removed-subject = Twój numer telefonu nie jest już przypisany do konta w serwisie { $tenant }
phone-removed-1 = Numer telefonu kończący się na { $ending } został potwierdzony przez inne konto w serwisie { $tenant }, więc nie loguje już do Twojego.
phone-removed-2 = Numery telefonów zmieniają właścicieli; jeśli ten numer nadal jest Twój, potwierdź go ponownie na swoim koncie i skontaktuj się z pomocą techniczną serwisu { $tenant }.

magic-link-subject = Twój link do logowania w serwisie { $tenant }
magic-link-1 = Zaloguj się w serwisie { $tenant }, otwierając ten link (działa jeden raz, przez 10 minut):
magic-link-button = Zaloguj się
magic-link-2 = Jeśli nie chciałeś się logować, zignoruj tę wiadomość: bez linku nikt się nie zaloguje.

email-otp-subject = Twój kod logowania w serwisie { $tenant }
email-otp-1 = Twój kod logowania w serwisie { $tenant } to:
email-otp-2 = Działa jeden raz, przez 10 minut. Nigdy go nikomu nie podawaj: serwis { $tenant } nigdy o niego nie poprosi. Jeśli nie chciałeś się logować, zignoruj tę wiadomość.

step-up-code-subject = Twój kod bezpieczeństwa w serwisie { $tenant }
step-up-code-1 = Twój kod bezpieczeństwa w serwisie { $tenant } to:
step-up-code-2 = Działa jeden raz, przez 5 minut. Nigdy go nikomu nie podawaj: serwis { $tenant } nigdy o niego nie poprosi.

step-up-link-subject = Potwierdź, że to Ty, w serwisie { $tenant }
step-up-link-1 = Potwierdź, że to Ty, w serwisie { $tenant }.
step-up-link-2 = Otwórz ten link na urządzeniu, na którym o niego prosiłeś (działa jeden raz, przez 10 minut):
step-up-link-button = Tak, to ja

agent-request-subject = { $agent } prosi o działanie w Twoim imieniu w { $tenant }
agent-request-1 = { $agent }, agent zarejestrowany w { $tenant }, prosi o zgodę na działanie w Twoim imieniu.
agent-request-binding = Sprawdź, czy tam, gdzie zaczęto, widać ten sam komunikat: { $hint }
agent-request-2 = Zatwierdź lub odrzuć prośbę, otwierając ten link (działa przez 5 minut):
agent-request-button = Przejrzyj prośbę
agent-request-3 = Jeśli niczego nie zaczynałeś z { $agent }, odrzuć prośbę: nic nie zostanie mu udostępnione bez Twojej zgody.

agent-revoked-subject = Agent { $agent } został unieważniony w { $tenant }
agent-revoked-1 = Agent { $agent } w { $tenant } został unieważniony z panelu: jego sekret już nie działa, a wszystkie jego tokeny przestały działać.
agent-revoked-2 = Jeśli nie zrobił tego żaden właściciel { $tenant }, natychmiast sprawdź dziennik audytu i członków { $tenant }.

webhook-disabled-subject = Punkt końcowy webhooka w { $tenant } został wyłączony
webhook-disabled-1 = Punkt końcowy webhooka { $endpoint } w { $tenant } przez kilka dni odrzucał każde doręczenie, więc został wyłączony: nie są do niego wysyłane żadne zdarzenia.
webhook-disabled-2 = Napraw punkt końcowy, włącz go ponownie w panelu, a następnie wyślij ponownie nieudane doręczenia z jego dziennika doręczeń.

guardian-consent-subject = Prośba o Twoją zgodę na konto w { $tenant }
guardian-consent-1 = Ktoś założył konto w { $tenant } z adresem { $hint }, podał, że nie osiągnął wieku, w którym może sam wyrazić zgodę, i wskazał Ciebie jako rodzica lub opiekuna.
guardian-consent-2 = Otwórz ten link, aby zobaczyć, jakie dane { $tenant } będzie przetwarzać, i wyrazić zgodę lub jej odmówić (działa raz, przez 7 dni):
guardian-consent-button = Sprawdź prośbę
guardian-consent-3 = Jeśli nie jesteś rodzicem ani opiekunem tej osoby albo nie spodziewałeś się tej wiadomości, nie wyrażaj zgody: odmów lub zignoruj tę wiadomość, a konto pozostanie nieaktywne.

guardian-portal-subject = Zarządzaj kontem dziecka w { $tenant }
guardian-portal-1 = Poprosiłeś o zarządzanie kontem { $hint } w { $tenant }, na które wyraziłeś zgodę. Otwórz ten link, aby wycofać zgodę, pobrać kopię danych lub usunąć konto (działa przez godzinę):
guardian-portal-button = Otwórz portal opiekuna
guardian-portal-2 = Jeśli to nie Ty prosiłeś, zignoruj tę wiadomość: nic się nie zmieni, dopóki link nie zostanie użyty.

guardian-export-subject = Dane konta { $hint } w { $tenant }
guardian-export-1 = Oto kopia danych, które { $tenant } przechowuje o koncie { $hint }, o którą prosiłeś. Pobierz ją tym linkiem (działa przez 24 godziny):
guardian-export-button = Pobierz dane
guardian-export-2 = Plik zawiera dane osobowe: przechowuj go bezpiecznie. Jeśli nie prosiłeś o tę kopię, zignoruj tę wiadomość i zarządzaj kontem w portalu opiekuna.

# An address change
email-change-subject = Potwierdź nowy adres e-mail w serwisie { $tenant }
email-change-1 = Ktoś, zapewne ty, poprosił o przeniesienie konta w serwisie { $tenant } na ten adres. Otwórz ten link, aby to potwierdzić (działa raz, przez godzinę):
email-change-button = Potwierdź nowy adres
email-change-2 = Jeśli to nie ty, zignoruj tę wiadomość: nic się nie zmieni.
email-change-asked-subject = Twój adres e-mail w serwisie { $tenant } ma się zmienić
email-change-asked-1 = Ktoś zalogowany na twoje konto w serwisie { $tenant } poprosił o przeniesienie go na adres { $hint }.
email-change-asked-2 = Zmiana nastąpi dopiero po potwierdzeniu tego adresu.
email-change-asked-3 = Jeśli to nie ty, natychmiast zmień hasło: to anuluje prośbę i wyloguje wszystkich innych.
email-change-taken-subject = Twój adres podano dla innego konta w serwisie { $tenant }
email-change-taken-1 = Ktoś poprosił o przeniesienie konta w serwisie { $tenant } na ten adres, który ma już konto. Nic nie zostało zmienione.
email-change-taken-2 = Jeśli to ty, zaloguj się tym adresem. Jeśli nie, zignoruj tę wiadomość.
