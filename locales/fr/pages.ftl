# Pages hébergées à l'URL des comptes. Chaque texte affiché par une page provient d'ici.
# Variables : $tenant est le nom du service (affiché tel quel) ; $min est un nombre.

lang-name = Français
page-footer = Cette page appartient au service de connexion de { $tenant }.
skip-to-content = Aller au contenu

# Confirmation de l'adresse e-mail
verify-title = Confirmez votre adresse e-mail
verify-intro = Confirmez que cette adresse e-mail est bien la vôtre pour terminer la création de votre compte sur { $tenant }.
verify-button = Confirmer mon adresse
verify-done-title = Adresse confirmée
verify-done = Votre adresse e-mail est confirmée. Vous pouvez maintenant vous connecter à { $tenant }.

# Réinitialisation du mot de passe
reset-title = Choisissez un nouveau mot de passe
reset-intro = Choisissez un nouveau mot de passe pour votre compte sur { $tenant }. Tous les appareils connectés au compte seront déconnectés.
reset-password-label = Nouveau mot de passe
reset-password-hint = De { $min } à 128 caractères. Une longue phrase facile à retenir est un bon choix.
reset-confirm-label = Confirmez le nouveau mot de passe
reset-button = Enregistrer le nouveau mot de passe
reset-error-length = Le mot de passe doit comporter de { $min } à 128 caractères.
reset-error-weak = Ce mot de passe est trop courant ou trop facile à deviner. Choisissez-en un autre.
reset-error-mismatch = Les deux mots de passe ne sont pas identiques.
reset-error-summary = Le mot de passe n'a pas été enregistré. Vérifiez les champs signalés ci-dessous.
reset-done-title = Mot de passe modifié
reset-done = Votre mot de passe a été modifié et tous les appareils connectés à votre compte ont été déconnectés. Connectez-vous à { $tenant } avec votre nouveau mot de passe.

# Lien de connexion
magic-title = Connexion à { $tenant }
magic-intro = Appuyez sur le bouton pour vous connecter à { $tenant } dans ce navigateur.
magic-button = Se connecter à { $tenant }
magic-unusable-title = Ouvrez ce lien dans l'application
magic-unusable = Ce lien de connexion ne peut pas être utilisé sur cette page. Ouvrez-le depuis l'application { $tenant } où vous l'avez demandé, ou demandez-y un nouveau lien.

# Lien de vérification renforcée (confirmer qu'il s'agit bien de vous)
stepup-title = Confirmez qu'il s'agit bien de vous
stepup-intro = Retournez sur { $tenant } pour terminer la vérification. Utilisez le même navigateur ou appareil que celui où vous avez demandé ce lien.
stepup-button = Retourner sur { $tenant }
stepup-unusable = Ce lien ne peut être utilisé que dans l'application { $tenant } où vous l'avez demandé. Copiez-le dans cette application, ou demandez-y un nouveau lien.

# Après une action
continue = Continuer vers { $tenant }

# Erreurs
error-expired-title = Ce lien ne fonctionne plus
error-expired = Le lien a expiré ou a déjà été utilisé. Demandez-en un nouveau à { $tenant }.
error-invalid-title = Ce lien n'est pas valide
error-invalid = Le lien est incomplet ou a été modifié en chemin. Ouvrez-le à nouveau depuis l'e-mail, ou demandez-en un nouveau.
error-csrf-title = La page a expiré
error-csrf = Pour votre sécurité, le formulaire n'a pas pu être envoyé. Ouvrez à nouveau le lien de l'e-mail et réessayez.
error-disabled-title = Les liens de connexion sont désactivés
error-disabled = { $tenant } n'accepte pas les liens de connexion pour le moment.
error-busy-title = Veuillez réessayer dans un instant
error-busy = Trop de tentatives, ou le service est surchargé. Patientez une minute puis réessayez.
login-error-network = Trop de connexions échouées depuis votre réseau. Connectez-vous sur un appareil déjà utilisé ici, choisissez un autre moyen de connexion ou réessayez plus tard.
login-error-captcha-required = Trop de connexions échouées depuis votre réseau. Confirmez ci-dessous que vous êtes une personne, puis connectez-vous.
login-error-captcha = La vérification que vous êtes une personne a échoué. Veuillez réessayer.
error-internal-title = Une erreur s'est produite
error-internal = La demande n'a pas pu aboutir. Réessayez plus tard.

# Connexion à une application (serveur d'autorisation)
oauth-invalid-title = Cette demande de connexion n’est pas valable
oauth-invalid = L’application qui vous a envoyé ici a fait une erreur dans sa demande. Revenez à l’application et réessayez.
login-title = Se connecter à { $tenant }
login-intro = Connectez-vous pour continuer vers { $client }.
login-email-label = Adresse e-mail
login-password-label = Mot de passe
login-button = Se connecter
login-code-send = M’envoyer un code par e-mail
login-error-credentials = L’adresse e-mail ou le mot de passe n’est pas correct.
login-error-email = Saisissez votre adresse e-mail, par exemple nom@example.com.
login-error-unverified = Confirmez d’abord votre adresse e-mail : ouvrez le lien que nous vous avons envoyé, puis reconnectez-vous.
login-error-expired = Cette étape a expiré. Reconnectez-vous.
login-passkey-heading = Avec une clé d’accès
login-passkey-button = Se connecter avec une clé d’accès
login-passkey-failed = La clé d’accès ne vous a pas connecté. Réessayez ou connectez-vous autrement.
login-social-heading = Avec un autre compte
login-social-button = Continuer avec { $provider }
login-social-failed = La connexion avec ce compte n’a pas abouti. Réessayez ou connectez-vous autrement.
login-social-email-exists = Un compte existe déjà avec cette adresse e-mail. Connectez-vous d’abord à ce compte autrement.
login-link-send = M’envoyer un lien de connexion
login-forgot-button = Mot de passe oublié ?
login-signup-button = Créer un compte
link-sent-title = Consultez votre messagerie
link-sent = Si { $email } a un compte, nous y avons envoyé un lien de connexion. Ouvrez-le dans ce navigateur : il est valable 10 minutes.
forgot-sent-title = Consultez vos e-mails
forgot-sent = Si { $email } a un compte, nous lui avons envoyé un lien pour choisir un nouveau mot de passe. Il fonctionne une fois, pendant 1 heure ; il vous ramène ensuite ici pour vous connecter.
link-elsewhere-title = Ouvrez le lien dans le même navigateur
link-elsewhere = Ce lien de connexion ne fonctionne que dans le navigateur où vous l’avez demandé. Ouvrez-le là, ou demandez-en un nouveau ici.
code-title = Saisissez le code
code-intro = Si { $email } a un compte, nous y avons envoyé un code à 6 chiffres. Le code est valable 10 minutes.
code-label = Code
code-button = Continuer
code-error = Le code n’est pas correct ou a expiré.
mfa-title = Validation en deux étapes
mfa-intro = Saisissez le code à 6 chiffres de votre application d’authentification, ou l’un de vos codes de récupération.
mfa-error = Le code n’est pas correct.
mfa-enrol-title = Configurez d’abord la validation en deux étapes
mfa-enrol = { $tenant } exige la validation en deux étapes. Configurez-la dans l’application { $tenant }, puis reconnectez-vous ici.

# Consentement
consent-title = { $client } souhaite utiliser votre compte { $tenant }
consent-intro = Si vous l’autorisez, { $client } pourra :
consent-reconsent = Vous avez déjà autorisé { $client }. L’application demande maintenant davantage. Si vous l’autorisez, elle pourra :
consent-unverified = { $tenant } n’a pas vérifié { $client }. Ne l’autorisez que si vous la connaissez et lui faites confiance.
consent-unchanged = { $scope } (déjà autorisé)
consent-resource = Pour : { $resource }
consent-optional = Vous pouvez choisir ce que vous autorisez :
consent-allow = Autoriser
consent-deny = Refuser
scope-openid = Savoir qui vous êtes
scope-profile = Voir votre nom
scope-email = Voir votre adresse e-mail
scope-phone = Voir votre numéro de téléphone
scope-address = Voir votre adresse postale
scope-offline_access = Garder l’accès quand vous n’utilisez pas l’application
scope-other = Utiliser { $scope }

# Se déconnecter d’une application (RP-initiated logout)
logout-title = Se déconnecter de { $tenant } ?
logout-intro = Voulez-vous vous déconnecter de { $tenant } dans ce navigateur ?
logout-intro-client = { $client } demande à vous déconnecter de { $tenant }. Voulez-vous vous déconnecter dans ce navigateur ?
logout-button = Se déconnecter
logout-done-title = Déconnexion effectuée
logout-done = La session { $tenant } de ce navigateur est fermée. Vous pouvez fermer cette page.
logout-invalid-title = Cette demande de déconnexion n’est pas valable
logout-invalid = L’application qui vous a envoyé ici a fait une erreur dans sa demande, rien n’a donc été changé. Revenez à l’application et réessayez.

link-confirm-title = Associer votre compte { $provider }
link-confirm-intro = Vous allez associer un compte { $provider } à { $account } : il permettra ensuite de se connecter aussi à { $account }.
link-confirm-warning = Si vous ne l’avez pas demandé vous-même dans l’application, fermez cette page : quelqu’un essaie peut-être d’accéder à votre compte ou de vous connecter au sien.
link-confirm-button = Continuer vers { $provider }

agent-request-title = { $agent } demande à agir pour vous
agent-request-intro = { $agent } demande à agir en votre nom chez { $tenant }. Si vous approuvez, il pourra :
agent-request-binding = N'approuvez que si, là où vous avez commencé, le même message s'affiche : { $message }
agent-request-approve = Approuver
agent-request-deny = Refuser
agent-request-approved-title = Approuvé
agent-request-approved = { $agent } peut maintenant agir pour vous. Vous pouvez retirer cet accord à tout moment depuis votre compte.
agent-request-denied-title = Refusé
agent-request-denied = { $agent } a été refusé. Rien ne lui a été partagé.
agent-request-blocked-title = Vous avez révoqué cet agent
agent-request-blocked = Vous avez révoqué { $agent } auparavant. Rétablissez-le d'abord depuis votre compte si vous voulez qu'il agisse de nouveau pour vous.
agent-request-resource = Ces autorisations valent uniquement pour { $resource }.
agent-request-unconfirmed-title = Confirmez d'abord votre adresse e-mail
agent-request-unconfirmed = L'adresse e-mail de votre compte n'est pas encore confirmée : vous ne pouvez donc pas approuver d'agents. Suivez le lien de l'e-mail de vérification, puis rouvrez cette demande.
device-title = Connecter un appareil
device-intro = Saisissez le code affiché par votre appareil.
device-code-label = Code
device-code-button = Continuer
device-code-error = Ce code est incorrect ou a expiré. Vérifiez-le et réessayez.
device-signin-intro = Connectez-vous à { $tenant } pour connecter l'appareil.
device-confirm-check = N'approuvez que si vous venez de lancer cela sur votre appareil et qu'il affiche le code { $code }.
eudi-title = Se connecter avec votre portefeuille européen
eudi-age-title = Prouver votre âge avec votre portefeuille européen
eudi-scan = Scannez ce code avec l'application du portefeuille sur votre téléphone, puis suivez ses étapes.
eudi-same-device = Ouvrir le portefeuille sur cet appareil
eudi-expires = Ce code reste valable { $minutes } minutes. Revenez sur { $tenant } une fois votre portefeuille terminé.

guardian-consent-title = Consentement pour le compte d'un enfant
guardian-consent-intro = Le compte { $child } chez { $tenant } appartient à une personne qui n'a pas l'âge de consentir seule et qui vous a désigné comme parent ou tuteur. { $controller } demande votre consentement pour traiter ses données.
guardian-consent-purposes = Les données serviraient à :
guardian-consent-details = Données : { $categories }. Conservation : { $retention }. Base légale : { $basis }.
guardian-consent-withdraw = Vous pouvez retirer votre consentement à tout moment depuis le portail parental ; le compte cesse alors de fonctionner.
guardian-consent-attestation = Je suis le parent ou le tuteur légal de cette personne
guardian-consent-attestation-missing = Cochez la case pour confirmer que vous êtes le parent ou le tuteur légal de cette personne.
guardian-consent-accept = Je consens
guardian-consent-decline = Je refuse
guardian-accepted-title = Consentement donné
guardian-accepted = Le compte { $child } peut maintenant être utilisé. Vous pouvez le gérer, ou retirer votre consentement, depuis le portail parental.
guardian-declined-title = Consentement refusé
guardian-declined = Le compte { $child } reste inutilisable, et ses données seront supprimées dans 30 jours.
guardian-portal-title = Portail parental
guardian-portal-intro = Le compte { $child } chez { $tenant } est { $status }.
guardian-status-active = actif
guardian-status-held = en attente de consentement
guardian-status-blocked = bloqué
guardian-portal-receipt = Vous avez consenti le { $date } auprès de { $controller }, pour :
guardian-action-withdraw = Retirer le consentement
guardian-action-export = M'envoyer une copie des données
guardian-action-delete = Supprimer le compte
guardian-delete-confirm = La suppression efface définitivement le compte et ses données. Confirmez dans les 10 minutes.
guardian-action-delete-confirm = Oui, supprimer définitivement le compte
guardian-deleted-title = Compte supprimé
guardian-deleted = Le compte { $child } et ses données ont été supprimés.
guardian-withdrawn = Consentement retiré : le compte ne peut plus être utilisé, et toutes ses sessions ont pris fin.
guardian-export-sent = Un lien de téléchargement des données a été envoyé à votre adresse e-mail.
guardian-wallet-heading = Prouvez que vous êtes majeur
guardian-wallet-button = Utiliser mon portefeuille européen d'identité numérique
guardian-wallet-proven = Votre portefeuille européen d'identité numérique a prouvé que vous êtes majeur.
error-guardian-pending-title = En attente du consentement d'un parent
error-guardian-pending = Ce compte pourra être utilisé dès qu'un parent ou tuteur aura consenti. Demandez-le depuis l'application : il recevra un e-mail avec un lien.
error-guardian-declined-title = Consentement refusé
error-guardian-declined = Un parent ou tuteur a refusé son consentement pour ce compte, qui ne peut donc pas être utilisé.
error-age-required-title = Créez d'abord votre compte
error-age-required = { $tenant } protège les mineurs : créez d'abord votre compte dans l'application avec votre date de naissance.
error-email-unconfirmed-title = Confirmez d'abord votre adresse e-mail
error-email-unconfirmed = Ouvrez le lien de confirmation envoyé à votre adresse e-mail, puis réessayez. Tant que l'adresse n'est pas confirmée, le compte ne peut ni donner accès à des applications ni ajouter de nouveaux moyens de connexion.

# Les pages du tableau de bord (les liens de ses e-mails)
dashboard-error-summary = Rien n'a été enregistré. Vérifiez les champs signalés ci-dessous.
dashboard-expired = Le lien a expiré, a déjà été utilisé ou appartient à un autre compte du tableau de bord. Demandez-en un nouveau depuis le tableau de bord.
dashboard-verify-title = Confirmez l'adresse de votre tableau de bord
dashboard-verify-intro = Connectez-vous avec votre compte du tableau de bord Tessera pour confirmer que cette adresse est la vôtre. Le lien ne vaut qu'avec le mot de passe du compte.
dashboard-verify-button = Confirmer mon adresse
dashboard-verify-done-title = Adresse confirmée
dashboard-verify-done = L'adresse de votre compte du tableau de bord est confirmée. Vous pouvez maintenant accepter des invitations à d'autres locataires.
dashboard-forgot-title = Réinitialiser le mot de passe du tableau de bord
dashboard-forgot-intro = Saisissez l'adresse de votre compte du tableau de bord Tessera. S'il existe, nous lui envoyons un lien pour choisir un nouveau mot de passe.
dashboard-forgot-button = M'envoyer un lien
dashboard-forgot-done-title = Consultez vos e-mails
dashboard-forgot-done = Si cette adresse a un compte du tableau de bord, un lien pour choisir un nouveau mot de passe est en route. Il fonctionne une fois, pendant 1 heure.
dashboard-reset-title = Choisissez un nouveau mot de passe du tableau de bord
dashboard-reset-intro = Choisissez un nouveau mot de passe pour votre compte du tableau de bord Tessera. Toutes les sessions du compte prendront fin.
dashboard-reset-done-title = Mot de passe modifié
dashboard-reset-done = Le mot de passe de votre tableau de bord a été modifié et toutes les sessions du compte ont pris fin. Connectez-vous avec le nouveau mot de passe.
dashboard-detached = Ce compte n'avait jamais confirmé son adresse : le nouveau mot de passe l'a donc repris. Il n'a plus accès à ces locataires, créés par la personne qui s'était inscrite avec cette adresse :
dashboard-invite-title = Acceptez votre invitation
dashboard-invite-existing = Vous êtes invité à administrer un locataire sur Tessera en tant que { $email }. Saisissez le mot de passe de votre compte du tableau de bord pour accepter.
dashboard-invite-new = Vous êtes invité à administrer un locataire sur Tessera en tant que { $email }. Choisissez un mot de passe pour votre compte du tableau de bord pour accepter.
dashboard-invite-button = Accepter l'invitation
dashboard-invite-done-title = Invitation acceptée
dashboard-invite-done = Vous êtes maintenant membre de { $slug } avec le rôle { $role }. Connectez-vous au tableau de bord en tant que { $email }.
dashboard-invite-member = Ce compte est déjà membre de ce locataire.

# L'aperçu des e-mails pour le développement (mail.dev_viewer)
dev-mail-title = E-mails envoyés (développement)
dev-mail-intro = Chaque message écrit par le transport fichier, le plus récent d'abord. Cette page est active parce que mail.dev_viewer est activé : laissez-le désactivé partout ailleurs que sur votre propre machine.
dev-mail-empty = Aucun e-mail n'a encore été envoyé.
dev-mail-message-title = Un message envoyé
dev-mail-to = À : { $value }
dev-mail-subject = Objet : { $value }
dev-mail-date = Envoyé : { $value }
dev-mail-tenant = Locataire : { $value }
dev-mail-back = Retour à la liste
dev-mail-missing-title = Message introuvable
dev-mail-missing = La boîte d'envoi n'a aucun message de ce nom. Revenez à la liste.

# Inscription sur la page de connexion
signup-title = Créez votre compte { $tenant }
signup-intro = Choisissez un mot de passe pour votre nouveau compte. Nous vous envoyons un lien pour confirmer l'adresse ; il vous ramène ici pour vous connecter.
signup-button = Créer le compte
signup-dob-label = Date de naissance
signup-error-dob = Saisissez votre date de naissance, par exemple 2010-04-30.
signup-consent = J'accepte les conditions d'utilisation et la politique de confidentialité de { $tenant }
signup-error-consent = Cochez la case pour accepter les conditions d'utilisation et la politique de confidentialité.
signup-terms = Les conditions d'utilisation de { $tenant }
signup-privacy = La politique de confidentialité de { $tenant }
signup-error-summary = Le compte n'a pas été créé. Vérifiez les champs signalés ci-dessous.
signup-back = Retour à la connexion
signup-sent-title = Confirmez votre adresse e-mail
signup-sent = Si { $email } peut être inscrit, nous lui avons envoyé un lien pour la confirmer. Ouvrez le lien, puis connectez-vous ici.
