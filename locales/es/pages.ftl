# Páginas alojadas en la URL de cuentas. Todo texto que muestra una página viene de aquí.
# Variables: $tenant es el nombre del servicio (se muestra tal cual); $min es un número.

lang-name = Español
page-footer = Esta página pertenece al servicio de inicio de sesión de { $tenant }.
skip-to-content = Saltar al contenido

# Confirmación de la dirección de correo
verify-title = Confirma tu dirección de correo
verify-intro = Confirma que esta dirección de correo es tuya para terminar de configurar tu cuenta en { $tenant }.
verify-button = Confirmar mi dirección
verify-done-title = Dirección confirmada
verify-done = Tu dirección de correo está confirmada. Ya puedes iniciar sesión en { $tenant }.

# Restablecimiento de la contraseña
reset-title = Elige una contraseña nueva
reset-intro = Elige una contraseña nueva para tu cuenta en { $tenant }. Se cerrará la sesión en todos los dispositivos conectados a la cuenta.
reset-password-label = Contraseña nueva
reset-password-hint = De { $min } a 128 caracteres. Una frase larga y fácil de recordar es una buena elección.
reset-confirm-label = Repite la contraseña nueva
reset-button = Guardar la contraseña nueva
reset-error-length = La contraseña debe tener de { $min } a 128 caracteres.
reset-error-weak = Esta contraseña es demasiado común o fácil de adivinar. Elige otra.
reset-error-mismatch = Las dos contraseñas no coinciden.
reset-error-summary = La contraseña no se ha guardado. Revisa los campos marcados.
reset-done-title = Contraseña cambiada
reset-done = Tu contraseña se ha cambiado y se ha cerrado la sesión en todos los dispositivos conectados a tu cuenta. Inicia sesión en { $tenant } con tu contraseña nueva.

# Enlace de inicio de sesión
magic-title = Iniciar sesión en { $tenant }
magic-intro = Pulsa el botón para iniciar sesión en { $tenant } en este navegador.
magic-button = Iniciar sesión en { $tenant }
magic-unusable-title = Abre este enlace en la aplicación
magic-unusable = Este enlace de inicio de sesión no se puede usar en esta página. Ábrelo desde la aplicación de { $tenant } donde lo pediste, o pide allí uno nuevo.

# Enlace de verificación adicional (confirmar que eres tú)
stepup-title = Confirma que eres tú
stepup-intro = Vuelve a { $tenant } para terminar de confirmar que eres tú. Usa el mismo navegador o dispositivo donde pediste este enlace.
stepup-button = Volver a { $tenant }
stepup-unusable = Este enlace solo se puede usar en la aplicación de { $tenant } donde lo pediste. Cópialo en esa aplicación, o pide allí uno nuevo.

# Después de una acción
continue = Continuar a { $tenant }

# Errores
error-expired-title = Este enlace ya no funciona
error-expired = El enlace ha caducado o ya se ha usado. Pide uno nuevo a { $tenant }.
error-invalid-title = Este enlace no es válido
error-invalid = El enlace está incompleto o se modificó por el camino. Ábrelo de nuevo desde el correo, o pide uno nuevo.
error-csrf-title = La página ha caducado
error-csrf = Por tu seguridad, no se pudo enviar el formulario. Abre de nuevo el enlace del correo e inténtalo otra vez.
error-disabled-title = Los enlaces de inicio de sesión están desactivados
error-disabled = { $tenant } no acepta enlaces de inicio de sesión en este momento.
error-busy-title = Inténtalo de nuevo en un momento
error-busy = Demasiados intentos, o el servicio está ocupado. Espera un minuto e inténtalo de nuevo.
login-error-network = Demasiados inicios de sesión fallidos desde tu red. Inicia sesión en un dispositivo que ya hayas usado aquí, usa otra forma de iniciar sesión o inténtalo más tarde.
login-error-captcha-required = Demasiados inicios de sesión fallidos desde tu red. Confirma abajo que eres una persona y luego inicia sesión.
login-error-captcha = La comprobación de que eres una persona no se superó. Inténtalo de nuevo.
error-internal-title = Algo salió mal
error-internal = No se pudo completar la solicitud. Inténtalo más tarde.

# Iniciar sesión en una aplicación (servidor de autorización)
oauth-invalid-title = Esta solicitud de inicio de sesión no es válida
oauth-invalid = La aplicación que le ha enviado aquí ha cometido un error en su solicitud. Vuelva a la aplicación e inténtelo de nuevo.
login-title = Iniciar sesión en { $tenant }
login-intro = Inicie sesión para continuar a { $client }.
login-email-label = Dirección de correo electrónico
login-password-label = Contraseña
login-button = Iniciar sesión
login-code-send = Enviarme un código por correo
login-error-credentials = La dirección de correo o la contraseña no son correctas.
login-error-email = Escriba su dirección de correo, por ejemplo nombre@example.com.
login-error-unverified = Confirme primero su dirección de correo: abra el enlace que le hemos enviado y vuelva a iniciar sesión.
login-error-expired = Este paso ha caducado. Vuelva a iniciar sesión.
login-passkey-heading = Con una llave de acceso
login-passkey-button = Iniciar sesión con una llave de acceso
login-passkey-failed = La llave de acceso no ha iniciado su sesión. Inténtelo de nuevo o inicie sesión de otra forma.
login-social-heading = Con otra cuenta
login-social-button = Continuar con { $provider }
login-social-failed = No se ha podido iniciar sesión con esa cuenta. Inténtelo de nuevo o inicie sesión de otra forma.
login-social-email-exists = Ya existe una cuenta con esta dirección de correo. Inicie sesión primero en ella de otra forma.
login-link-send = Enviarme un enlace de acceso
login-forgot-button = ¿Has olvidado tu contraseña?
login-signup-button = Crear una cuenta
link-sent-title = Revise su correo
link-sent = Si { $email } tiene una cuenta, le hemos enviado un enlace de acceso. Ábralo en este navegador: vale durante 10 minutos.
forgot-sent-title = Revisa tu correo
forgot-sent = Si { $email } tiene una cuenta, le hemos enviado un enlace para elegir una contraseña nueva. Funciona una vez, durante 1 hora; después te trae de vuelta aquí para iniciar sesión.
link-elsewhere-title = Abra el enlace en el mismo navegador
link-elsewhere = Este enlace de acceso solo funciona en el navegador donde lo pidió. Ábralo allí o pida uno nuevo aquí.
code-title = Introduzca el código
code-intro = Si { $email } tiene una cuenta, le hemos enviado un código de 6 cifras. El código vale durante 10 minutos.
code-label = Código
code-button = Continuar
code-error = El código no es correcto o ha caducado.
mfa-title = Verificación en dos pasos
mfa-intro = Introduzca el código de 6 cifras de su aplicación de autenticación o uno de sus códigos de recuperación.
mfa-error = El código no es correcto.
mfa-enrol-title = Configure primero la verificación en dos pasos
mfa-enrol = { $tenant } exige la verificación en dos pasos. Configúrela en la aplicación de { $tenant } y vuelva a iniciar sesión aquí.

# Consentimiento
consent-title = { $client } quiere usar su cuenta de { $tenant }
consent-intro = Si lo permite, { $client } podrá:
consent-reconsent = Ya ha dado permisos a { $client }. Ahora pide más. Si lo permite, podrá:
consent-unverified = { $tenant } no ha verificado { $client }. Permítalo solo si la conoce y confía en ella.
consent-unchanged = { $scope } (ya permitido)
consent-resource = Para: { $resource }
consent-optional = Puede elegir qué permitir de esto:
consent-allow = Permitir
consent-deny = Denegar
scope-openid = Saber quién es usted
scope-profile = Ver su nombre
scope-email = Ver su dirección de correo
scope-phone = Ver su número de teléfono
scope-address = Ver su dirección postal
scope-offline_access = Mantener el acceso cuando no use la aplicación
scope-other = Usar { $scope }

# Cerrar sesión desde una aplicación (RP-initiated logout)
logout-title = ¿Cerrar sesión en { $tenant }?
logout-intro = ¿Quiere cerrar su sesión de { $tenant } en este navegador?
logout-intro-client = { $client } le pide cerrar su sesión de { $tenant }. ¿Quiere cerrar la sesión en este navegador?
logout-button = Cerrar sesión
logout-done-title = Sesión cerrada
logout-done = Se ha cerrado su sesión de { $tenant } en este navegador. Puede cerrar esta página.
logout-invalid-title = Esta solicitud de cierre de sesión no es válida
logout-invalid = La aplicación que le ha enviado aquí ha cometido un error en su solicitud, así que no se ha cambiado nada. Vuelva a la aplicación e inténtelo de nuevo.

link-confirm-title = Vincular su cuenta de { $provider }
link-confirm-intro = Va a vincular una cuenta de { $provider } a { $account }: después también iniciará sesión en { $account }.
link-confirm-warning = Si no lo ha pedido usted mismo en la aplicación, cierre esta página: alguien podría estar intentando entrar en su cuenta o hacerle entrar en la suya.
link-confirm-button = Continuar a { $provider }

agent-request-title = { $agent } pide actuar por ti
agent-request-intro = { $agent } pide actuar en tu nombre en { $tenant }. Si lo apruebas, podrá:
agent-request-binding = Aprueba solo si donde empezaste se muestra el mismo mensaje: { $message }
agent-request-approve = Aprobar
agent-request-deny = Rechazar
agent-request-approved-title = Aprobado
agent-request-approved = { $agent } ya puede actuar por ti. Puedes retirarlo en cualquier momento desde tu cuenta.
agent-request-denied-title = Rechazado
agent-request-denied = Se rechazó a { $agent }. No se compartió nada.
agent-request-blocked-title = Revocaste este agente
agent-request-blocked = Revocaste { $agent } antes. Restáuralo primero desde tu cuenta si quieres que vuelva a actuar por ti.
agent-request-resource = Estos permisos son solo para { $resource }.
agent-request-unconfirmed-title = Confirma primero tu dirección de correo
agent-request-unconfirmed = La dirección de correo de tu cuenta aún no está confirmada, así que no puedes aprobar agentes. Sigue el enlace del correo de verificación y vuelve a abrir esta solicitud.
device-title = Conectar un dispositivo
device-intro = Introduce el código que muestra tu dispositivo.
device-code-label = Código
device-code-button = Continuar
device-code-error = Ese código no es correcto o ha caducado. Compruébalo e inténtalo de nuevo.
device-signin-intro = Inicia sesión en { $tenant } para conectar el dispositivo.
device-confirm-check = Aprueba solo si acabas de empezar esto en tu dispositivo y muestra el código { $code }.
eudi-title = Inicia sesión con tu cartera de la UE
eudi-age-title = Demuestra tu edad con tu cartera de la UE
eudi-scan = Escanea este código con la aplicación de la cartera en tu teléfono y sigue sus pasos.
eudi-same-device = Abrir la cartera en este dispositivo
eudi-expires = Este código sirve durante { $minutes } minutos más. Vuelve a { $tenant } cuando tu cartera termine.

guardian-consent-title = Consentimiento para la cuenta de un menor
guardian-consent-intro = La cuenta { $child } en { $tenant } pertenece a alguien que no tiene la edad para consentir por sí mismo y que te ha señalado como su madre, padre o tutor. { $controller } pide tu consentimiento para tratar sus datos.
guardian-consent-purposes = Los datos se usarían para:
guardian-consent-details = Datos: { $categories }. Conservación: { $retention }. Base jurídica: { $basis }.
guardian-consent-withdraw = Puedes retirar tu consentimiento en cualquier momento desde el portal del tutor; la cuenta dejará entonces de funcionar.
guardian-consent-attestation = Soy la madre, el padre o el tutor legal de esta persona
guardian-consent-attestation-missing = Marca la casilla para confirmar que eres la madre, el padre o el tutor legal de esta persona.
guardian-consent-accept = Doy mi consentimiento
guardian-consent-decline = Lo rechazo
guardian-accepted-title = Consentimiento dado
guardian-accepted = La cuenta { $child } ya puede usarse. Puedes gestionarla, o retirar tu consentimiento, desde el portal del tutor.
guardian-declined-title = Consentimiento rechazado
guardian-declined = La cuenta { $child } sigue sin poder usarse, y sus datos se eliminarán dentro de 30 días.
guardian-portal-title = Portal del tutor
guardian-portal-intro = La cuenta { $child } en { $tenant } está { $status }.
guardian-status-active = activa
guardian-status-held = a la espera de consentimiento
guardian-status-blocked = bloqueada
guardian-portal-receipt = Diste tu consentimiento el { $date } a { $controller }, para:
guardian-action-withdraw = Retirar el consentimiento
guardian-action-export = Enviarme una copia de los datos
guardian-action-delete = Eliminar la cuenta
guardian-delete-confirm = Eliminar la cuenta la borra para siempre junto con sus datos. Confírmalo en 10 minutos.
guardian-action-delete-confirm = Sí, eliminar la cuenta para siempre
guardian-deleted-title = Cuenta eliminada
guardian-deleted = La cuenta { $child } y sus datos se han eliminado.
guardian-withdrawn = Consentimiento retirado: la cuenta no puede usarse y todas sus sesiones han terminado.
guardian-export-sent = Se ha enviado a tu dirección de correo un enlace para descargar los datos.
guardian-wallet-heading = Demuestra que eres mayor de edad
guardian-wallet-button = Usar mi cartera europea de identidad digital
guardian-wallet-proven = Tu cartera europea de identidad digital ha demostrado que eres mayor de edad.
error-guardian-pending-title = A la espera del consentimiento de un progenitor
error-guardian-pending = Esta cuenta podrá usarse cuando una madre, un padre o un tutor dé su consentimiento. Pídeselo desde la aplicación: recibirá un correo con un enlace.
error-guardian-declined-title = Consentimiento rechazado
error-guardian-declined = Una madre, un padre o un tutor rechazó el consentimiento para esta cuenta, así que no puede usarse.
error-age-required-title = Crea primero tu cuenta
error-age-required = { $tenant } protege a los menores: crea primero tu cuenta en la aplicación con tu fecha de nacimiento.
error-email-unconfirmed-title = Confirma primero tu dirección de correo
error-email-unconfirmed = Abre el enlace de confirmación que enviamos a tu dirección de correo y vuelve a intentarlo. Mientras la dirección no esté confirmada, la cuenta no puede dar acceso a aplicaciones ni añadir nuevas formas de iniciar sesión.

# Las páginas del panel (los enlaces de sus correos)
dashboard-error-summary = No se ha guardado nada. Revisa los campos marcados abajo.
dashboard-expired = El enlace ha caducado, ya se usó o pertenece a otra cuenta del panel. Pide uno nuevo desde el panel.
dashboard-verify-title = Confirma la dirección de tu panel
dashboard-verify-intro = Inicia sesión con tu cuenta del panel de Tessera para confirmar que esta dirección es tuya. El enlace solo vale junto con la contraseña de la cuenta.
dashboard-verify-button = Confirmar mi dirección
dashboard-verify-done-title = Dirección confirmada
dashboard-verify-done = La dirección de tu cuenta del panel está confirmada. Ahora puedes aceptar invitaciones a otros inquilinos.
dashboard-forgot-title = Restablece la contraseña del panel
dashboard-forgot-intro = Escribe la dirección de tu cuenta del panel de Tessera. Si tiene una, le enviamos un enlace para elegir una contraseña nueva.
dashboard-forgot-button = Envíame un enlace
dashboard-forgot-done-title = Revisa tu correo
dashboard-forgot-done = Si esa dirección tiene una cuenta del panel, ya va de camino un enlace para elegir una contraseña nueva. Funciona una vez, durante 1 hora.
dashboard-reset-title = Elige una contraseña nueva para el panel
dashboard-reset-intro = Elige una contraseña nueva para tu cuenta del panel de Tessera. Todas las sesiones de la cuenta terminarán.
dashboard-reset-done-title = Contraseña cambiada
dashboard-reset-done = La contraseña de tu panel se ha cambiado y todas las sesiones de la cuenta han terminado. Inicia sesión con la contraseña nueva.
dashboard-detached = La cuenta nunca había confirmado su dirección, así que la contraseña nueva la ha tomado. Ya no llega a estos inquilinos, que creó quien se registró con esta dirección:
dashboard-invite-title = Acepta tu invitación
dashboard-invite-existing = Te han invitado a administrar un inquilino en Tessera como { $email }. Escribe la contraseña de tu cuenta del panel para aceptar.
dashboard-invite-new = Te han invitado a administrar un inquilino en Tessera como { $email }. Elige una contraseña para tu cuenta del panel para aceptar.
dashboard-invite-button = Aceptar la invitación
dashboard-invite-done-title = Invitación aceptada
dashboard-invite-done = Ahora eres miembro de { $slug } con el rol { $role }. Inicia sesión en el panel como { $email }.
dashboard-invite-member = Esta cuenta ya es miembro de ese inquilino.

# El visor de correo para desarrollo (mail.dev_viewer)
dev-mail-title = Correo enviado (desarrollo)
dev-mail-intro = Cada mensaje que escribió el transporte de archivos, el más reciente primero. Esta página está activa porque mail.dev_viewer está activado: mantenlo desactivado en cualquier sitio que no sea tu propia máquina.
dev-mail-empty = Todavía no se ha enviado ningún correo.
dev-mail-message-title = Un mensaje enviado
dev-mail-to = Para: { $value }
dev-mail-subject = Asunto: { $value }
dev-mail-date = Enviado: { $value }
dev-mail-tenant = Inquilino: { $value }
dev-mail-back = Volver a la lista
dev-mail-missing-title = No existe ese mensaje
dev-mail-missing = La bandeja de salida no tiene ningún mensaje con ese nombre. Vuelve a la lista.

# Registro en la página de inicio de sesión
signup-title = Crea tu cuenta de { $tenant }
signup-intro = Elige una contraseña para tu cuenta nueva. Te enviamos un enlace para confirmar la dirección; te trae de vuelta aquí para iniciar sesión.
signup-button = Crear la cuenta
signup-dob-label = Fecha de nacimiento
signup-error-dob = Escribe tu fecha de nacimiento, por ejemplo 2010-04-30.
signup-consent = Acepto las condiciones y la política de privacidad de { $tenant }
signup-error-consent = Marca la casilla para aceptar las condiciones y la política de privacidad.
signup-terms = Las condiciones de { $tenant }
signup-privacy = La política de privacidad de { $tenant }
signup-error-summary = No se ha creado la cuenta. Revisa los campos marcados abajo.
signup-back = Volver al inicio de sesión
signup-sent-title = Confirma tu dirección de correo
signup-sent = Si { $email } se puede registrar, le hemos enviado un enlace para confirmarla. Abre el enlace y luego inicia sesión aquí.
