/** A refusal of a control call; the error middleware answers it as `{ error: message }`. */
export class ControlError extends Error {
  override readonly name = 'ControlError';

  constructor(
    readonly status: number,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
