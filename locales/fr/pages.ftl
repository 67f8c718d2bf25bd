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
error-internal-title = Une erreur s'est produite
error-internal = La demande n'a pas pu aboutir. Réessayez plus tard.
