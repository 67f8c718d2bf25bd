# Messages envoyés aux utilisateurs finaux d'un service. Chaque texte affiché par un message provient d'ici.
# Variables : $tenant est le nom du service (affiché tel quel) ; $ending correspond aux deux derniers chiffres
# d'un numéro de téléphone ; $hint est la description, fournie par l'application, de ce qui est confirmé.
# Un message se compose de son objet et de ses paragraphes, dans l'ordre ; un « -button » est le libellé du
# bouton du lien dans la partie HTML (la partie texte affiche le lien seul sur sa ligne).

link-fallback = Ou copiez ce lien dans votre navigateur :
step-up-hint = Vous avez demandé à confirmer : { $hint }
step-up-warning = Si vous n'êtes pas à l'origine de cette demande, n'y donnez pas suite : n'utilisez ni le code ni le lien, et ne les transmettez à personne. Quelqu'un essaie peut-être d'effectuer une modification sensible sur votre compte ; changez votre mot de passe en cas de doute.

verify-email-subject = Confirmez votre adresse e-mail pour { $tenant }
verify-email-1 = Bienvenue sur { $tenant }.
verify-email-2 = Confirmez votre adresse e-mail en ouvrant ce lien (il fonctionne une fois, pendant 24 heures) :
verify-email-button = Confirmer mon adresse e-mail
verify-email-3 = Si vous n'avez pas créé de compte sur { $tenant }, ignorez ce message.

account-exists-subject = Vous avez déjà un compte sur { $tenant }
account-exists-1 = Quelqu'un a essayé de créer un compte sur { $tenant } avec cette adresse e-mail, mais elle en a déjà un.
account-exists-2 = Si c'était vous, connectez-vous avec votre mot de passe ou choisissez-en un nouveau ici (le lien fonctionne une fois, pendant 1 heure) :
account-exists-button = Réinitialiser mon mot de passe
account-exists-3 = Si ce n'était pas vous, ignorez ce message : rien n'a changé.

password-reset-subject = Réinitialisez votre mot de passe sur { $tenant }
password-reset-1 = Nous avons reçu une demande de réinitialisation de votre mot de passe sur { $tenant }.
password-reset-2 = Choisissez un nouveau mot de passe en ouvrant ce lien (il fonctionne une fois, pendant 1 heure) :
password-reset-button = Choisir un nouveau mot de passe
password-reset-3 = Si vous n'avez rien demandé, ignorez ce message ; votre mot de passe reste inchangé.

password-changed-subject = Votre mot de passe sur { $tenant } a été modifié
password-changed-1 = Votre mot de passe sur { $tenant } vient d'être modifié.
password-changed-2 = Si c'était vous, vous n'avez rien à faire.
password-changed-3 = Si ce n'était pas vous, réinitialisez immédiatement votre mot de passe depuis la page de connexion de { $tenant } et contactez le support de { $tenant }.

invitation-subject = Votre compte sur { $tenant } est prêt
invitation-1 = Un compte sur { $tenant } a été créé pour cette adresse e-mail.
invitation-2 = Choisissez votre mot de passe en ouvrant ce lien (il fonctionne une fois, pendant 7 jours) :
invitation-button = Choisir mon mot de passe
invitation-3 = Si vous ne vous y attendiez pas, ignorez ce message : personne ne peut se connecter avec cette adresse tant qu'un mot de passe n'a pas été choisi via le lien.
org-invitation-subject = Rejoignez { $organization } sur { $tenant }
org-invitation-1 = Vous êtes invité à rejoindre { $organization } sur { $tenant }.
org-invitation-2 = Acceptez l'invitation en ouvrant ce lien (il fonctionne une fois, pendant 7 jours) :
org-invitation-button = Accepter l'invitation
org-invitation-3 = Si vous ne vous y attendiez pas, ignorez ce message : rien ne change tant que le lien n'est pas utilisé.

mfa-reset-subject = La vérification en deux étapes de votre compte sur { $tenant } a été réinitialisée
mfa-reset-1 = Un administrateur de { $tenant } a retiré l'application d'authentification et les codes de récupération de votre compte, comme vous ou une personne se faisant passer pour vous l'a demandé.
mfa-reset-2 = Configurez à nouveau la vérification en deux étapes depuis votre compte.
mfa-reset-3 = Si vous n'avez rien demandé, réinitialisez immédiatement votre mot de passe depuis la page de connexion de { $tenant } et contactez le support de { $tenant }.

phone-added-subject = Un numéro de téléphone a été ajouté à votre compte sur { $tenant }
phone-added-1 = Le numéro de téléphone se terminant par { $ending } vient d'être confirmé sur votre compte { $tenant } : les codes envoyés par SMS à ce numéro vous connectent désormais.
phone-added-2 = Si c'était vous, vous n'avez rien à faire.
phone-added-3 = Si ce n'était pas vous, quelqu'un a accès à votre compte : réinitialisez immédiatement votre mot de passe depuis la page de connexion de { $tenant } et contactez le support de { $tenant }.

phone-removed-subject = Votre numéro de téléphone a quitté votre compte sur { $tenant }
phone-removed-1 = Le numéro de téléphone se terminant par { $ending } a été confirmé par un autre compte { $tenant } : il ne permet donc plus de se connecter au vôtre.
phone-removed-2 = Les numéros de téléphone changent de propriétaire ; si celui-ci est toujours le vôtre, confirmez-le à nouveau depuis votre compte et contactez le support de { $tenant }.

magic-link-subject = Votre lien de connexion pour { $tenant }
magic-link-1 = Connectez-vous à { $tenant } en ouvrant ce lien (il fonctionne une fois, pendant 10 minutes) :
magic-link-button = Se connecter
magic-link-2 = Si vous n'avez pas demandé à vous connecter, ignorez ce message : personne ne peut se connecter sans le lien.

email-otp-subject = Votre code de connexion pour { $tenant }
email-otp-1 = Votre code de connexion pour { $tenant } est :
email-otp-2 = Il fonctionne une fois, pendant 10 minutes. Ne le communiquez jamais : { $tenant } ne vous le demandera jamais. Si vous n'avez pas demandé à vous connecter, ignorez ce message.

step-up-code-subject = Votre code de sécurité pour { $tenant }
step-up-code-1 = Votre code de sécurité pour { $tenant } est :
step-up-code-2 = Il fonctionne une fois, pendant 5 minutes. Ne le communiquez jamais : { $tenant } ne vous le demandera jamais.

step-up-link-subject = Confirmez votre identité sur { $tenant }
step-up-link-1 = Confirmez votre identité sur { $tenant }.
step-up-link-2 = Ouvrez ce lien sur l'appareil où vous avez fait la demande (il fonctionne une fois, pendant 10 minutes) :
step-up-link-button = C'est bien moi

agent-request-subject = { $agent } demande à agir pour vous chez { $tenant }
agent-request-1 = { $agent }, un agent enregistré auprès de { $tenant }, demande à agir en votre nom.
agent-request-binding = Vérifiez que là où vous avez commencé, le même message s'affiche : { $hint }
agent-request-2 = Approuvez ou refusez la demande en ouvrant ce lien (valable 5 minutes) :
agent-request-button = Examiner la demande
agent-request-3 = Si vous n'avez rien commencé avec { $agent }, refusez la demande : rien ne lui est partagé sans votre accord.

agent-revoked-subject = L'agent { $agent } a été révoqué chez { $tenant }
agent-revoked-1 = L'agent { $agent } de { $tenant } a été révoqué depuis le tableau de bord : son secret ne fonctionne plus et tous ses jetons ont cessé de fonctionner.
agent-revoked-2 = Si aucun propriétaire de { $tenant } ne l'a fait, vérifiez immédiatement le journal d'audit et les membres de { $tenant }.

webhook-disabled-subject = Un point de terminaison webhook de { $tenant } a été désactivé
webhook-disabled-1 = Le point de terminaison webhook { $endpoint } de { $tenant } a échoué à chaque livraison pendant plusieurs jours ; il a donc été désactivé : aucun événement ne lui est plus envoyé.
webhook-disabled-2 = Corrigez le point de terminaison, réactivez-le depuis le tableau de bord, puis renvoyez les livraisons échouées depuis son journal de livraison.

guardian-consent-subject = Votre consentement est demandé pour un compte chez { $tenant }
guardian-consent-1 = Quelqu'un a créé un compte chez { $tenant } avec l'adresse { $hint }, a indiqué ne pas avoir l'âge de consentir seul et vous a désigné comme parent ou tuteur.
guardian-consent-2 = Ouvrez ce lien pour voir ce que { $tenant } traiterait et pour donner ou refuser votre consentement (il fonctionne une fois, pendant 7 jours) :
guardian-consent-button = Voir la demande
guardian-consent-3 = Si vous n'êtes pas le parent ou le tuteur de cette personne, ou si vous n'attendiez pas ce message, ne consentez pas : refusez ou ignorez ce message, et le compte restera inutilisable.

guardian-portal-subject = Gérer le compte de votre enfant chez { $tenant }
guardian-portal-1 = Vous avez demandé à gérer le compte { $hint } chez { $tenant }, pour lequel vous avez donné votre consentement. Ouvrez ce lien pour retirer votre consentement, obtenir une copie des données ou supprimer le compte (il fonctionne pendant une heure) :
guardian-portal-button = Ouvrir le portail parental
guardian-portal-2 = Si vous n'avez rien demandé, ignorez ce message : rien ne change tant que le lien n'est pas utilisé.

guardian-export-subject = Les données du compte { $hint } chez { $tenant }
guardian-export-1 = Voici la copie demandée des données que { $tenant } détient sur le compte { $hint }. Téléchargez-la avec ce lien (il fonctionne pendant 24 heures) :
guardian-export-button = Télécharger les données
guardian-export-2 = Le fichier contient des données personnelles : conservez-le en lieu sûr. Si vous n'avez pas demandé cette copie, ignorez ce message et gérez le compte depuis le portail parental.

# An address change
email-change-subject = Confirmez votre nouvelle adresse e-mail pour { $tenant }
email-change-1 = Quelqu’un, sans doute vous, a demandé de déplacer un compte { $tenant } vers cette adresse. Ouvrez ce lien pour le confirmer (il fonctionne une fois, pendant une heure) :
email-change-button = Confirmer la nouvelle adresse
email-change-2 = Si ce n’était pas vous, ignorez ce message : rien ne change.
email-change-asked-subject = Votre adresse e-mail { $tenant } va changer
email-change-asked-1 = Quelqu’un connecté à votre compte { $tenant } a demandé de le déplacer vers { $hint }.
email-change-asked-2 = Le changement n’a lieu qu’une fois cette adresse confirmée.
email-change-asked-3 = Si ce n’était pas vous, changez votre mot de passe tout de suite : cela annule la demande et déconnecte tous les autres.
email-change-taken-subject = Votre adresse a été proposée pour un autre compte { $tenant }
email-change-taken-1 = Quelqu’un a demandé de déplacer un compte { $tenant } vers cette adresse, qui a déjà un compte. Rien n’a été changé.
email-change-taken-2 = Si c’était vous, connectez-vous plutôt avec cette adresse. Sinon, ignorez ce message.
