# Strony udostępniane pod adresem URL kont. Stąd pochodzi każdy tekst wyświetlany na stronie.
# Zmienne: $tenant to nazwa serwisu (wyświetlana bez zmian); $min to liczba.

lang-name = Polski
page-footer = Ta strona należy do usługi logowania serwisu { $tenant }.
skip-to-content = Przejdź do treści

# Potwierdzenie adresu e-mail
verify-title = Potwierdź swój adres e-mail
verify-intro = Potwierdź, że ten adres e-mail należy do Ciebie, aby dokończyć zakładanie konta w serwisie { $tenant }.
verify-button = Potwierdź mój adres
verify-done-title = Adres potwierdzony
verify-done = Twój adres e-mail został potwierdzony. Możesz teraz zalogować się w serwisie { $tenant }.

# Resetowanie hasła
reset-title = Wybierz nowe hasło
reset-intro = Wybierz nowe hasło do konta w serwisie { $tenant }. Wszystkie urządzenia zalogowane na to konto zostaną wylogowane.
reset-password-label = Nowe hasło
reset-password-hint = Od { $min } do 128 znaków. Dobrym wyborem jest długie, łatwe do zapamiętania zdanie.
reset-confirm-label = Powtórz nowe hasło
reset-button = Zapisz nowe hasło
reset-error-length = Hasło musi mieć od { $min } do 128 znaków.
reset-error-weak = To hasło jest zbyt popularne lub łatwe do odgadnięcia. Wybierz inne.
reset-error-mismatch = Podane hasła nie są takie same.
reset-error-summary = Hasło nie zostało zapisane. Sprawdź oznaczone pola.
reset-done-title = Hasło zmienione
reset-done = Twoje hasło zostało zmienione, a wszystkie urządzenia zalogowane na Twoje konto zostały wylogowane. Zaloguj się w serwisie { $tenant } nowym hasłem.

# Link do logowania
magic-title = Logowanie w serwisie { $tenant }
magic-intro = Naciśnij przycisk, aby zalogować się w serwisie { $tenant } w tej przeglądarce.
magic-button = Zaloguj się w serwisie { $tenant }
magic-unusable-title = Otwórz ten link w aplikacji
magic-unusable = Tego linku do logowania nie można użyć na tej stronie. Otwórz go w aplikacji serwisu { $tenant }, w której o niego prosiłeś, albo poproś tam o nowy.

# Link do dodatkowego potwierdzenia tożsamości (potwierdzenie, że to Ty)
stepup-title = Potwierdź, że to Ty
stepup-intro = Wróć do serwisu { $tenant }, aby dokończyć potwierdzanie tożsamości. Użyj tej samej przeglądarki lub urządzenia, na którym poprosiłeś o ten link.
stepup-button = Wróć do serwisu { $tenant }
stepup-unusable = Tego linku można użyć tylko w aplikacji serwisu { $tenant }, w której o niego prosiłeś. Skopiuj go do tej aplikacji albo poproś tam o nowy.

# Po wykonaniu działania
continue = Przejdź do serwisu { $tenant }

# Błędy
error-expired-title = Ten link już nie działa
error-expired = Link wygasł lub został już użyty. Poproś serwis { $tenant } o nowy.
error-invalid-title = Ten link jest nieprawidłowy
error-invalid = Link jest niepełny lub został zmieniony po drodze. Otwórz go ponownie z wiadomości e-mail albo poproś o nowy.
error-csrf-title = Strona wygasła
error-csrf = Ze względów bezpieczeństwa nie udało się wysłać formularza. Otwórz ponownie link z wiadomości e-mail i spróbuj jeszcze raz.
error-disabled-title = Linki do logowania są wyłączone
error-disabled = Serwis { $tenant } obecnie nie przyjmuje linków do logowania.
error-busy-title = Spróbuj ponownie za chwilę
error-busy = Zbyt wiele prób lub usługa jest przeciążona. Odczekaj minutę i spróbuj ponownie.
login-error-network = Zbyt wiele nieudanych logowań z Twojej sieci. Zaloguj się na urządzeniu, którego już tu używałeś, wybierz inny sposób logowania lub spróbuj później.
login-error-captcha-required = Zbyt wiele nieudanych logowań z Twojej sieci. Potwierdź poniżej, że jesteś człowiekiem, a potem się zaloguj.
login-error-captcha = Weryfikacja, że jesteś człowiekiem, nie powiodła się. Spróbuj ponownie.
error-internal-title = Coś poszło nie tak
error-internal = Nie udało się wykonać żądania. Spróbuj ponownie później.

# Logowanie do aplikacji (serwer autoryzacji)
oauth-invalid-title = To żądanie logowania jest nieprawidłowe
oauth-invalid = Aplikacja, która Cię tu przekierowała, wysłała błędne żądanie. Wróć do aplikacji i spróbuj ponownie.
login-title = Zaloguj się do { $tenant }
login-intro = Zaloguj się, aby przejść do { $client }.
login-email-label = Adres e-mail
login-password-label = Hasło
login-button = Zaloguj się
login-code-send = Wyślij mi kod e-mailem
login-error-credentials = Adres e-mail lub hasło są nieprawidłowe.
login-error-email = Wpisz swój adres e-mail, np. imie@example.com.
login-error-unverified = Najpierw potwierdź adres e-mail: otwórz wysłany link, a potem zaloguj się ponownie.
login-error-expired = Ten krok wygasł. Zaloguj się ponownie.
login-passkey-heading = Kluczem dostępu
login-passkey-button = Zaloguj się kluczem dostępu
login-passkey-failed = Logowanie kluczem dostępu nie powiodło się. Spróbuj ponownie albo zaloguj się inaczej.
login-social-heading = Innym kontem
login-social-button = Kontynuuj przez { $provider }
login-social-failed = Logowanie tym kontem się nie powiodło. Spróbuj ponownie lub zaloguj się inaczej.
login-social-email-exists = Konto z tym adresem e-mail już istnieje. Najpierw zaloguj się do niego w inny sposób.
login-link-send = Wyślij mi link logowania
login-forgot-button = Nie pamiętasz hasła?
login-signup-button = Załóż konto
link-sent-title = Sprawdź pocztę
link-sent = Jeśli { $email } ma konto, wysłaliśmy na ten adres link logowania. Otwórz go w tej przeglądarce: jest ważny 10 minut.
forgot-sent-title = Sprawdź pocztę
forgot-sent = Jeśli { $email } ma konto, wysłaliśmy na ten adres link do wyboru nowego hasła. Działa jeden raz, przez 1 godzinę; potem wrócisz tutaj, aby się zalogować.
link-elsewhere-title = Otwórz link w tej samej przeglądarce
link-elsewhere = Ten link logowania działa tylko w przeglądarce, w której o niego poproszono. Otwórz go tam albo poproś tutaj o nowy.
code-title = Wpisz kod
code-intro = Jeśli { $email } ma konto, wysłaliśmy na ten adres 6-cyfrowy kod. Kod jest ważny 10 minut.
code-label = Kod
code-button = Dalej
code-error = Kod jest nieprawidłowy lub wygasł.
mfa-title = Weryfikacja dwuetapowa
mfa-intro = Wpisz 6-cyfrowy kod z aplikacji uwierzytelniającej albo jeden z kodów odzyskiwania.
mfa-error = Kod jest nieprawidłowy.
mfa-enrol-title = Najpierw skonfiguruj weryfikację dwuetapową
mfa-enrol = { $tenant } wymaga weryfikacji dwuetapowej. Skonfiguruj ją w aplikacji { $tenant }, a potem zaloguj się tutaj ponownie.

# Zgoda
consent-title = { $client } chce korzystać z Twojego konta w { $tenant }
consent-intro = Jeśli się zgodzisz, { $client } będzie mogła:
consent-reconsent = Już wcześniej udzieliłeś zgody { $client }. Teraz aplikacja prosi o więcej. Jeśli się zgodzisz, będzie mogła:
consent-unverified = { $tenant } nie zweryfikował { $client }. Zgódź się tylko wtedy, gdy znasz tę aplikację i jej ufasz.
consent-unchanged = { $scope } (zgoda już udzielona)
consent-resource = Dla: { $resource }
consent-optional = Możesz wybrać, na co się zgadzasz:
consent-allow = Zezwól
consent-deny = Odmów
scope-openid = Wiedzieć, kim jesteś
scope-profile = Widzieć Twoje imię i nazwisko
scope-email = Widzieć Twój adres e-mail
scope-phone = Widzieć Twój numer telefonu
scope-address = Widzieć Twój adres pocztowy
scope-offline_access = Zachować dostęp, gdy nie korzystasz z aplikacji
scope-other = Używać { $scope }

# Wylogowanie z aplikacji (RP-initiated logout)
logout-title = Wylogować się z { $tenant }?
logout-intro = Czy chcesz wylogować się z { $tenant } w tej przeglądarce?
logout-intro-client = { $client } prosi o wylogowanie Cię z { $tenant }. Czy chcesz wylogować się w tej przeglądarce?
logout-button = Wyloguj się
logout-done-title = Wylogowano
logout-done = Wylogowano Cię z { $tenant } w tej przeglądarce. Możesz zamknąć tę stronę.
logout-invalid-title = To żądanie wylogowania jest nieprawidłowe
logout-invalid = Aplikacja, która Cię tu przekierowała, wysłała błędne żądanie, więc nic nie zostało zmienione. Wróć do aplikacji i spróbuj ponownie.

link-confirm-title = Połącz konto { $provider }
link-confirm-intro = Za chwilę połączysz konto { $provider } z { $account }: będzie ono też logować do { $account }.
link-confirm-warning = Jeśli nie prosiłeś o to sam w aplikacji, zamknij tę stronę: ktoś może próbować dostać się do twojego konta albo zalogować cię do swojego.
link-confirm-button = Przejdź do { $provider }

agent-request-title = { $agent } prosi o działanie w Twoim imieniu
agent-request-intro = { $agent } prosi o zgodę na działanie w Twoim imieniu w { $tenant }. Jeśli się zgodzisz, będzie mógł:
agent-request-binding = Zatwierdź tylko wtedy, gdy tam, gdzie zaczęto, widać ten sam komunikat: { $message }
agent-request-approve = Zatwierdź
agent-request-deny = Odrzuć
agent-request-approved-title = Zatwierdzono
agent-request-approved = { $agent } może teraz działać w Twoim imieniu. Możesz to w każdej chwili wycofać na swoim koncie.
agent-request-denied-title = Odrzucono
agent-request-denied = Odmówiono { $agent }. Nic mu nie udostępniono.
agent-request-blocked-title = Ten agent został przez Ciebie unieważniony
agent-request-blocked = Wcześniej unieważniłeś { $agent }. Najpierw przywróć go na swoim koncie, jeśli ma znów działać w Twoim imieniu.
agent-request-resource = Te uprawnienia dotyczą wyłącznie { $resource }.
agent-request-unconfirmed-title = Najpierw potwierdź swój adres e-mail
agent-request-unconfirmed = Adres e-mail Twojego konta nie jest jeszcze potwierdzony, więc nie możesz zatwierdzać agentów. Kliknij link w wiadomości weryfikacyjnej, a potem ponownie otwórz tę prośbę.
device-title = Połącz urządzenie
device-intro = Wpisz kod wyświetlany przez urządzenie.
device-code-label = Kod
device-code-button = Dalej
device-code-error = Ten kod jest nieprawidłowy lub wygasł. Sprawdź go i spróbuj ponownie.
device-signin-intro = Zaloguj się do { $tenant }, aby połączyć urządzenie.
device-confirm-check = Zatwierdź tylko wtedy, gdy właśnie zacząłeś to na swoim urządzeniu i wyświetla ono kod { $code }.
eudi-title = Zaloguj się portfelem UE
eudi-age-title = Potwierdź swój wiek portfelem UE
eudi-scan = Zeskanuj ten kod aplikacją portfela na telefonie i wykonaj jej kroki.
eudi-same-device = Otwórz portfel na tym urządzeniu
eudi-expires = Ten kod działa jeszcze przez { $minutes } min. Wróć do { $tenant }, gdy portfel skończy.

guardian-consent-title = Zgoda na konto dziecka
guardian-consent-intro = Konto { $child } w { $tenant } należy do osoby, która nie osiągnęła wieku, w którym może sama wyrazić zgodę, i która wskazała Ciebie jako rodzica lub opiekuna. { $controller } prosi o Twoją zgodę na przetwarzanie jej danych.
guardian-consent-purposes = Dane byłyby wykorzystywane do:
guardian-consent-details = Dane: { $categories }. Przechowywanie: { $retention }. Podstawa prawna: { $basis }.
guardian-consent-withdraw = Zgodę możesz wycofać w każdej chwili w portalu opiekuna; konto przestanie wtedy działać.
guardian-consent-attestation = Jestem rodzicem lub opiekunem prawnym tej osoby
guardian-consent-attestation-missing = Zaznacz pole, aby potwierdzić, że jesteś rodzicem lub opiekunem prawnym tej osoby.
guardian-consent-accept = Wyrażam zgodę
guardian-consent-decline = Odmawiam
guardian-accepted-title = Zgoda wyrażona
guardian-accepted = Konto { $child } może być teraz używane. Możesz nim zarządzać lub wycofać zgodę w portalu opiekuna.
guardian-declined-title = Odmowa zgody
guardian-declined = Konto { $child } pozostaje nieaktywne, a jego dane zostaną usunięte za 30 dni.
guardian-portal-title = Portal opiekuna
guardian-portal-intro = Konto { $child } w { $tenant } jest { $status }.
guardian-status-active = aktywne
guardian-status-held = w oczekiwaniu na zgodę
guardian-status-blocked = zablokowane
guardian-portal-receipt = Zgodę wyraziłeś { $date } wobec { $controller }, w celu:
guardian-action-withdraw = Wycofaj zgodę
guardian-action-export = Wyślij mi kopię danych
guardian-action-delete = Usuń konto
guardian-delete-confirm = Usunięcie konta trwale kasuje je wraz z danymi. Potwierdź w ciągu 10 minut.
guardian-action-delete-confirm = Tak, usuń konto na zawsze
guardian-deleted-title = Konto usunięte
guardian-deleted = Konto { $child } i jego dane zostały usunięte.
guardian-withdrawn = Zgoda wycofana: konta nie można używać, a wszystkie jego sesje zostały zakończone.
guardian-export-sent = Link do pobrania danych został wysłany na Twój adres e-mail.
guardian-wallet-heading = Potwierdź, że jesteś osobą dorosłą
guardian-wallet-button = Użyj mojego europejskiego portfela tożsamości cyfrowej
guardian-wallet-proven = Twój europejski portfel tożsamości cyfrowej potwierdził, że jesteś osobą dorosłą.
error-guardian-pending-title = Oczekiwanie na zgodę rodzica
error-guardian-pending = Z tego konta można korzystać, gdy rodzic lub opiekun wyrazi zgodę. Poproś o nią w aplikacji: otrzyma e-mail z linkiem.
error-guardian-declined-title = Odmowa zgody
error-guardian-declined = Rodzic lub opiekun odmówił zgody na to konto, więc nie można z niego korzystać.
error-age-required-title = Najpierw załóż konto
error-age-required = { $tenant } chroni osoby niepełnoletnie: najpierw załóż konto w aplikacji, podając datę urodzenia.
error-email-unconfirmed-title = Najpierw potwierdź adres e-mail
error-email-unconfirmed = Otwórz link potwierdzający wysłany na Twój adres e-mail, a potem spróbuj ponownie. Dopóki adres nie jest potwierdzony, konto nie może udzielać aplikacjom dostępu ani dodawać nowych sposobów logowania.

# Strony panelu (linki z wiadomości panelu)
dashboard-error-summary = Nic nie zostało zapisane. Sprawdź pola oznaczone poniżej.
dashboard-expired = Link wygasł, został już użyty albo należy do innego konta panelu. Poproś w panelu o nowy.
dashboard-verify-title = Potwierdź adres konta panelu
dashboard-verify-intro = Zaloguj się na swoje konto panelu Tessera, aby potwierdzić, że ten adres należy do Ciebie. Link działa tylko razem z hasłem tego konta.
dashboard-verify-button = Potwierdź mój adres
dashboard-verify-done-title = Adres potwierdzony
dashboard-verify-done = Adres Twojego konta panelu jest potwierdzony. Możesz teraz przyjmować zaproszenia do innych najemców.
dashboard-forgot-title = Zresetuj hasło do panelu
dashboard-forgot-intro = Wpisz adres swojego konta panelu Tessera. Jeśli takie konto istnieje, wyślemy na ten adres link do wyboru nowego hasła.
dashboard-forgot-button = Wyślij mi link
dashboard-forgot-done-title = Sprawdź pocztę
dashboard-forgot-done = Jeśli ten adres ma konto panelu, link do wyboru nowego hasła jest już w drodze. Działa jeden raz, przez 1 godzinę.
dashboard-reset-title = Wybierz nowe hasło do panelu
dashboard-reset-intro = Wybierz nowe hasło do swojego konta panelu Tessera. Wszystkie sesje tego konta zostaną zakończone.
dashboard-reset-done-title = Hasło zmienione
dashboard-reset-done = Hasło do panelu zostało zmienione, a wszystkie sesje konta zakończone. Zaloguj się nowym hasłem.
dashboard-detached = To konto nigdy nie potwierdziło adresu, więc nowe hasło je przejęło. Nie ma już dostępu do tych najemców, utworzonych przez osobę, która zarejestrowała się tym adresem:
dashboard-invite-title = Przyjmij zaproszenie
dashboard-invite-existing = Zaproszono Cię do zarządzania najemcą w Tessera jako { $email }. Aby przyjąć zaproszenie, wpisz hasło swojego konta panelu.
dashboard-invite-new = Zaproszono Cię do zarządzania najemcą w Tessera jako { $email }. Aby przyjąć zaproszenie, wybierz hasło do swojego konta panelu.
dashboard-invite-button = Przyjmij zaproszenie
dashboard-invite-done-title = Zaproszenie przyjęte
dashboard-invite-done = Jesteś teraz członkiem { $slug } z rolą { $role }. Zaloguj się do panelu jako { $email }.
dashboard-invite-member = To konto jest już członkiem tego najemcy.

# Podgląd poczty dla programistów (mail.dev_viewer)
dev-mail-title = Wysłana poczta (tryb deweloperski)
dev-mail-intro = Wszystkie wiadomości zapisane przez transport plikowy, od najnowszej. Ta strona działa, bo ustawiono mail.dev_viewer: wyłącz ją wszędzie poza własnym komputerem.
dev-mail-empty = Nie wysłano jeszcze żadnej wiadomości.
dev-mail-message-title = Wysłana wiadomość
dev-mail-to = Do: { $value }
dev-mail-subject = Temat: { $value }
dev-mail-date = Wysłano: { $value }
dev-mail-tenant = Najemca: { $value }
dev-mail-back = Wróć do listy
dev-mail-missing-title = Nie ma takiej wiadomości
dev-mail-missing = W skrzynce nadawczej nie ma wiadomości o tej nazwie. Wróć do listy.

# Rejestracja na stronie logowania
signup-title = Załóż konto w { $tenant }
signup-intro = Wybierz hasło do nowego konta. Wyślemy Ci link do potwierdzenia adresu; przyprowadzi Cię z powrotem tutaj, aby się zalogować.
signup-button = Załóż konto
signup-dob-label = Data urodzenia
signup-error-dob = Wpisz datę urodzenia, na przykład 2010-04-30.
signup-consent = Akceptuję regulamin i politykę prywatności { $tenant }
signup-error-consent = Zaznacz pole, aby zaakceptować regulamin i politykę prywatności.
signup-terms = Regulamin { $tenant }
signup-privacy = Polityka prywatności { $tenant }
signup-error-summary = Konto nie zostało założone. Sprawdź pola oznaczone poniżej.
signup-back = Wróć do logowania
signup-sent-title = Potwierdź adres e-mail
signup-sent = Jeśli { $email } można zarejestrować, wysłaliśmy na ten adres link do jego potwierdzenia. Otwórz link, a potem zaloguj się tutaj.
