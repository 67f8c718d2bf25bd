# Mensajes enviados a los usuarios finales de un servicio. Todo texto que muestra un mensaje viene de aquí.
# Variables: $tenant es el nombre del servicio (se muestra tal cual); $ending son los dos últimos dígitos
# de un número de teléfono; $hint es la descripción, dada por la aplicación, de lo que se confirma.
# Un mensaje es su asunto y sus párrafos, en orden; un "-button" es la etiqueta del botón
# del enlace en la parte HTML (la parte de texto muestra solo el enlace en su propia línea).

link-fallback = O copia este enlace en tu navegador:
step-up-hint = Has pedido confirmar: { $hint }
step-up-warning = Si no lo has pedido tú, no hagas nada: no uses el código ni el enlace, y no se los pases a nadie. Puede que alguien intente hacer un cambio delicado en tu cuenta; cambia tu contraseña si te preocupa.

verify-email-subject = Confirma tu dirección de correo para { $tenant }
verify-email-1 = Te damos la bienvenida a { $tenant }.
verify-email-2 = Confirma tu dirección de correo abriendo este enlace (funciona una vez, durante 24 horas):
verify-email-button = Confirmar mi dirección de correo
verify-email-3 = Si no has creado una cuenta en { $tenant }, ignora este mensaje.

account-exists-subject = Ya tienes una cuenta en { $tenant }
account-exists-1 = Alguien ha intentado crear una cuenta en { $tenant } con esta dirección de correo, pero ya tiene una.
account-exists-2 = Si has sido tú, inicia sesión con tu contraseña o elige una nueva aquí (el enlace funciona una vez, durante 1 hora):
account-exists-button = Restablecer mi contraseña
account-exists-3 = Si no has sido tú, ignora este mensaje: no ha cambiado nada.

password-reset-subject = Restablece tu contraseña de { $tenant }
password-reset-1 = Hemos recibido una solicitud para restablecer tu contraseña de { $tenant }.
password-reset-2 = Elige una contraseña nueva abriendo este enlace (funciona una vez, durante 1 hora):
password-reset-button = Elegir una contraseña nueva
password-reset-3 = Si no lo has pedido, ignora este mensaje; tu contraseña no ha cambiado.

password-changed-subject = Se ha cambiado tu contraseña de { $tenant }
password-changed-1 = Se acaba de cambiar tu contraseña de { $tenant }.
password-changed-2 = Si has sido tú, no tienes que hacer nada.
password-changed-3 = Si no has sido tú, restablece tu contraseña de inmediato desde la página de inicio de sesión de { $tenant } y contacta con el soporte de { $tenant }.

invitation-subject = Tu cuenta en { $tenant } está lista
invitation-1 = Se ha creado una cuenta en { $tenant } para esta dirección de correo.
invitation-2 = Elige tu contraseña abriendo este enlace (funciona una vez, durante 7 días):
invitation-button = Elegir mi contraseña
invitation-3 = Si no lo esperabas, ignora este mensaje: nadie puede iniciar sesión con esta dirección hasta que se elija una contraseña mediante el enlace.
org-invitation-subject = Únete a { $organization } en { $tenant }
org-invitation-1 = Te han invitado a unirte a { $organization } en { $tenant }.
org-invitation-2 = Acepta la invitación abriendo este enlace (funciona una vez, durante 7 días):
org-invitation-button = Aceptar la invitación
org-invitation-3 = Si no lo esperabas, ignora este mensaje: nada cambia si no se usa el enlace.

mfa-reset-subject = Se ha restablecido la verificación en dos pasos de tu cuenta en { $tenant }
mfa-reset-1 = Un administrador de { $tenant } ha quitado la aplicación de autenticación y los códigos de recuperación de tu cuenta, tal como pediste tú o alguien que dijo ser tú.
mfa-reset-2 = Vuelve a configurar la verificación en dos pasos desde tu cuenta.
mfa-reset-3 = Si no lo has pedido, restablece tu contraseña de inmediato desde la página de inicio de sesión de { $tenant } y contacta con el soporte de { $tenant }.

phone-added-subject = Se ha añadido un número de teléfono a tu cuenta en { $tenant }
phone-added-1 = Se acaba de confirmar el número de teléfono terminado en { $ending } en tu cuenta de { $tenant }: los códigos que se envíen a ese número ahora te permiten iniciar sesión.
phone-added-2 = Si has sido tú, no tienes que hacer nada.
phone-added-3 = Si no has sido tú, alguien tiene acceso a tu cuenta: restablece tu contraseña de inmediato desde la página de inicio de sesión de { $tenant } y contacta con el soporte de { $tenant }.

phone-removed-subject = Tu número de teléfono ya no está en tu cuenta de { $tenant }
phone-removed-1 = El número de teléfono terminado en { $ending } ha sido confirmado por otra cuenta de { $tenant }, así que ya no permite iniciar sesión en la tuya.
phone-removed-2 = Los números de teléfono cambian de dueño; si este sigue siendo tuyo, vuelve a confirmarlo desde tu cuenta y contacta con el soporte de { $tenant }.

magic-link-subject = Tu enlace de inicio de sesión para { $tenant }
magic-link-1 = Inicia sesión en { $tenant } abriendo este enlace (funciona una vez, durante 10 minutos):
magic-link-button = Iniciar sesión
magic-link-2 = Si no has pedido iniciar sesión, ignora este mensaje: nadie puede iniciar sesión sin el enlace.

email-otp-subject = Tu código de inicio de sesión para { $tenant }
email-otp-1 = Tu código de inicio de sesión para { $tenant } es:
email-otp-2 = Funciona una vez, durante 10 minutos. No lo compartas nunca: { $tenant } nunca te lo pedirá. Si no has pedido iniciar sesión, ignora este mensaje.

step-up-code-subject = Tu código de seguridad para { $tenant }
step-up-code-1 = Tu código de seguridad para { $tenant } es:
step-up-code-2 = Funciona una vez, durante 5 minutos. No lo compartas nunca: { $tenant } nunca te lo pedirá.

step-up-link-subject = Confirma que eres tú en { $tenant }
step-up-link-1 = Confirma que eres tú en { $tenant }.
step-up-link-2 = Abre este enlace en el dispositivo donde lo pediste (funciona una vez, durante 10 minutos):
step-up-link-button = Sí, soy yo

agent-request-subject = { $agent } pide actuar por ti en { $tenant }
agent-request-1 = { $agent }, un agente registrado en { $tenant }, pide actuar en tu nombre.
agent-request-binding = Comprueba que donde empezaste se muestra el mismo mensaje: { $hint }
agent-request-2 = Aprueba o rechaza la solicitud abriendo este enlace (funciona durante 5 minutos):
agent-request-button = Revisar la solicitud
agent-request-3 = Si no empezaste nada con { $agent }, rechaza la solicitud: no se comparte nada sin tu aprobación.

agent-revoked-subject = El agente { $agent } fue revocado en { $tenant }
agent-revoked-1 = El agente { $agent } de { $tenant } fue revocado desde el panel: su secreto ya no funciona y todos sus tokens han dejado de funcionar.
agent-revoked-2 = Si ningún propietario de { $tenant } lo hizo, revisa de inmediato el registro de auditoría y los miembros de { $tenant }.

webhook-disabled-subject = Se desactivó un endpoint de webhook de { $tenant }
webhook-disabled-1 = El endpoint de webhook { $endpoint } de { $tenant } falló todas las entregas durante días, por lo que se desactivó: ya no se le envían eventos.
webhook-disabled-2 = Corrige el endpoint, vuelve a activarlo desde el panel y reenvía las entregas fallidas desde su registro de entregas.

guardian-consent-subject = Se solicita tu consentimiento para una cuenta en { $tenant }
guardian-consent-1 = Alguien ha creado una cuenta en { $tenant } con la dirección { $hint }, ha indicado que no tiene la edad para consentir por sí mismo y te ha señalado como su madre, padre o tutor.
guardian-consent-2 = Abre este enlace para ver qué datos trataría { $tenant } y para dar o negar tu consentimiento (funciona una vez, durante 7 días):
guardian-consent-button = Revisar la solicitud
guardian-consent-3 = Si no eres la madre, el padre o el tutor de esta persona, o no esperabas este mensaje, no des tu consentimiento: recházalo o ignora este mensaje, y la cuenta seguirá sin poder usarse.

guardian-portal-subject = Gestiona la cuenta de tu hijo o hija en { $tenant }
guardian-portal-1 = Has pedido gestionar la cuenta { $hint } en { $tenant }, para la que diste tu consentimiento. Abre este enlace para retirar el consentimiento, obtener una copia de los datos o eliminar la cuenta (funciona durante una hora):
guardian-portal-button = Abrir el portal del tutor
guardian-portal-2 = Si no lo has pedido tú, ignora este mensaje: nada cambia mientras no se use el enlace.

guardian-export-subject = Los datos de la cuenta { $hint } en { $tenant }
guardian-export-1 = Aquí tienes la copia que pediste de los datos que { $tenant } guarda sobre la cuenta { $hint }. Descárgala con este enlace (funciona durante 24 horas):
guardian-export-button = Descargar los datos
guardian-export-2 = El archivo contiene datos personales: guárdalo de forma segura. Si no pediste esta copia, ignora este mensaje y gestiona la cuenta desde el portal del tutor.

# An address change
email-change-subject = Confirma tu nueva dirección de correo para { $tenant }
email-change-1 = Alguien, probablemente tú, pidió trasladar una cuenta de { $tenant } a esta dirección. Abre este enlace para confirmarlo (funciona una vez, durante una hora):
email-change-button = Confirmar la nueva dirección
email-change-2 = Si no fuiste tú, ignora este mensaje: no cambia nada.
email-change-asked-subject = Tu dirección de correo de { $tenant } va a cambiar
email-change-asked-1 = Alguien con sesión iniciada en tu cuenta de { $tenant } pidió trasladarla a { $hint }.
email-change-asked-2 = El cambio solo se hace cuando esa dirección se confirma.
email-change-asked-3 = Si no fuiste tú, cambia tu contraseña enseguida: eso anula la solicitud y cierra la sesión de todos los demás.
email-change-taken-subject = Tu dirección se propuso para otra cuenta de { $tenant }
email-change-taken-1 = Alguien pidió trasladar una cuenta de { $tenant } a esta dirección, que ya tiene una cuenta. No se ha cambiado nada.
email-change-taken-2 = Si fuiste tú, inicia sesión con esta dirección. Si no, ignora este mensaje.
